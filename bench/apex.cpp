// apex: DQN on CartPole-v1 under the `apex` policy (Ape-X on threads) with 1, 2 and 4 actors,
// beside `single`, at a fixed wall time; with --processes also with the actors in processes
// (this program started as 1 + A ranks on loopback: rank 0 learns, ranks 1..A act).
//
// Every run trains configs/dqn_apex_cartpole.toml (4 envs; 64-64 MLP, Adam 1e-3, batch 64) for
// --seconds of wall time (train.total_timesteps is out of reach; should_stop ends the run), then
// evaluates the greedy policy over 10 episodes on environments seeded apart from training's, as
// `concord eval` does. Per run: env steps/s, learner updates/s, updates per env step (single:
// 1, its train_frequency; apex: whatever the relative speeds of the actors and the learner make
// it), and the evaluation return. The baseline is `single` in the same invocation: one thread
// that acts, then updates, in turn.
//
// Ape-X's actors explore with fixed per-actor epsilons (0.4^(1 + 7 i / (A - 1))); `single` and
// apex with one actor decay epsilon over the first 10k steps.
//
//   apex [--seconds S] [--seeds N] [--actors 1,2,4] [--config FILE] [--set key=value ...] [--quick]
//        [--processes]
//
// An actor process runs one actor: the processes rows have A + 1 processes on the machine's
// cores, the threads rows one process of A + 1 busy threads.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "concord/cli/run_config.h"
#include "concord/cli/run_context.h"
#include "concord/cli/training_run.h"
#include "concord/comm/launch_environment.h"
#include "concord/core/timer.h"
#include "concord/policies/runtime/evaluation.h"
#include "machine_load.h"
#include "self_launch.h"

namespace {

constexpr int kEvalEpisodes = 10;

struct Outcome {
  int64_t steps = 0;
  int64_t updates = 0;
  double seconds = 0.0;
  double eval_return = 0.0;
};

// The run's settings; the ranks of a processes run make them alike (their configs must agree).
void configure(concord::core::Config& config, const std::string& policy, int actors, int64_t seed) {
  config.set("run.seed", seed, "--seeds");
  config.set("train.policy", policy, "apex bench");
  if (policy == "apex") config.set("policy.apex.actors", int64_t{actors}, "--actors");
}

Outcome run(concord::core::Config config, const std::string& policy, int actors, int64_t seed, double seconds) {
  configure(config, policy, actors, seed);
  concord::cli::TrainingRun training(config);
  concord::policies::TrainingState state;
  concord::core::Stopwatch clock;
  concord::policies::TrainingCallbacks callbacks;
  callbacks.should_stop = [&] { return clock.elapsed_seconds() >= seconds; };
  training.train(state, callbacks);
  Outcome outcome;
  outcome.seconds = clock.elapsed_seconds();
  outcome.steps = state.global_step;
  outcome.updates = state.updates;

  concord::envs::VectorEnvConfig eval_env = concord::cli::vector_env_config(config);
  eval_env.seed = static_cast<uint64_t>(seed + concord::policies::runtime::kEvalSeedOffset);
  outcome.eval_return = concord::policies::runtime::summarize_returns(
                            concord::policies::runtime::evaluate_episodes(training.learner(), eval_env, kEvalEpisodes))
                            .mean;
  return outcome;
}

// What rank 0 of a processes run prints, and the launching process reads back.
constexpr const char* kMarker = "concord-bench-apex:";

// One run as a rank of a launched world: apex with the world's actors; rank 0 stops at `seconds`,
// evaluates and prints the marker line; the actor ranks stop when the learner tells them.
int run_as_rank(concord::core::Config config, int64_t seed, double seconds) {
  const concord::comm::LaunchEnvironment launch = concord::comm::LaunchEnvironment::from_environment();
  if (launch.rank != 0) {
    configure(config, "apex", launch.world_size - 1, seed);
    concord::cli::TrainingRun training(config);
    concord::policies::TrainingState state;
    training.train(state, {});
    return 0;
  }
  const Outcome outcome = run(config, "apex", launch.world_size - 1, seed, seconds);
  std::printf("%s %lld %lld %.6f %.6f\n", kMarker, static_cast<long long>(outcome.steps),
              static_cast<long long>(outcome.updates), outcome.seconds, outcome.eval_return);
  return 0;
}

// A processes run: this program as 1 + actors ranks; nothing when a rank failed (it says why).
std::optional<Outcome> run_processes(const std::vector<std::string>& arguments, int actors) {
  const std::vector<concord::bench::RankOutcome> outcomes =
      concord::bench::run_self_as_ranks(actors + 1, arguments, /*echo_rank0=*/false, std::chrono::seconds(600));
  if (!concord::bench::report_rank_failures(outcomes)) return std::nullopt;
  std::istringstream lines(outcomes[0].output);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(kMarker, 0) != 0) continue;
    std::istringstream fields(line.substr(std::string(kMarker).size()));
    Outcome outcome;
    long long steps = 0, updates = 0;
    if (fields >> steps >> updates >> outcome.seconds >> outcome.eval_return) {
      outcome.steps = steps;
      outcome.updates = updates;
      return outcome;
    }
  }
  std::fprintf(stderr, "apex: rank 0 printed no result line; its output:\n%s", outcomes[0].output.c_str());
  return std::nullopt;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"apex: DQN on CartPole-v1 under apex (1, 2, 4 actors) beside single, at a fixed wall time"};
  double seconds = 20.0;
  int seeds = 3;
  std::vector<int> actor_counts = {1, 2, 4};
  std::vector<std::string> overrides;
  bool quick = false;
  std::string config_file = std::string(CONCORD_SOURCE_DIR) + "/configs/dqn_apex_cartpole.toml";
  app.add_option("--seconds", seconds, "Wall time of every run")->check(CLI::Range(0.1, 86400.0));
  app.add_option("--seeds", seeds, "Seeds 1..N")->check(CLI::Range(1, 100));
  app.add_option("--actors", actor_counts, "Actor counts to run apex with (each must divide env.num_envs)")
      ->delimiter(',');
  app.add_option("--config", config_file, "Config file (default: configs/dqn_apex_cartpole.toml)");
  app.add_option("--set", overrides, "key=value overrides, as `concord train --set`");
  app.add_flag("--quick", quick, "Smoke run: 1 seed, 1 s per run");
  bool processes = false;
  app.add_flag("--processes", processes, "Also run apex with its actors in processes (1 + A ranks on loopback)");
  int64_t rank_seed = 0;
  app.add_option("--rank-seed", rank_seed, "(internal) the seed of the run this process is a rank of");
  CLI11_PARSE(app, argc, argv);
  if (quick) {
    seeds = 1;
    seconds = 1.0;
  }

  concord::core::Config config(concord::cli::concord_schema());
  try {
    config.merge_file(config_file);
    for (const std::string& override : overrides) config.apply_override(override);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "apex: %s\n", error.what());
    return 2;
  }
  config.set("train.total_timesteps", int64_t{1} << 40, "apex bench: runs end at --seconds");
  config.set("train.checkpoint_interval_steps", int64_t{1} << 40, "apex bench");
  if (concord::bench::started_as_rank()) {
    try {
      return run_as_rank(config, rank_seed, seconds);
    } catch (const std::exception& error) {
      std::fprintf(stderr, "apex: %s\n", error.what());
      return 1;
    }
  }

  std::printf("apex: %s, %g s per run, seeds 1..%d; load average %s\n", config_file.c_str(), seconds, seeds,
              concord::bench::load_average().c_str());
  std::printf("\n%-8s %6s %5s %10s %10s %10s %12s %12s\n", "policy", "actors", "seed", "env steps", "steps/s",
              "updates/s", "upd/step", "eval return");
  struct Row {
    std::string policy;  // "apex-p": apex with its actors in processes
    int actors;
  };
  std::vector<Row> rows = {{"single", 1}};
  for (int actors : actor_counts) rows.push_back({"apex", actors});
  if (processes) {
    for (int actors : actor_counts) rows.push_back({"apex-p", actors});
  }
  struct Summary {
    std::vector<double> steps_per_second, updates_per_second, evals;
  };
  std::vector<Summary> summaries(rows.size());
  try {
    for (int seed = 1; seed <= seeds; ++seed) {
      for (size_t r = 0; r < rows.size(); ++r) {
        Outcome outcome;
        if (rows[r].policy == "apex-p") {
          std::vector<std::string> arguments = {"--seconds", std::to_string(seconds), "--config",
                                                config_file, "--rank-seed",           std::to_string(seed)};
          for (const std::string& override : overrides) arguments.insert(arguments.end(), {"--set", override});
          const std::optional<Outcome> launched = run_processes(arguments, rows[r].actors);
          if (!launched) return 1;
          outcome = *launched;
        } else {
          outcome = run(config, rows[r].policy, rows[r].actors, seed, seconds);
        }
        const double steps_per_second = static_cast<double>(outcome.steps) / outcome.seconds;
        const double updates_per_second = static_cast<double>(outcome.updates) / outcome.seconds;
        summaries[r].steps_per_second.push_back(steps_per_second);
        summaries[r].updates_per_second.push_back(updates_per_second);
        summaries[r].evals.push_back(outcome.eval_return);
        std::printf("%-8s %6d %5d %10lld %10.0f %10.0f %12.3f %12.1f\n", rows[r].policy.c_str(), rows[r].actors, seed,
                    static_cast<long long>(outcome.steps), steps_per_second, updates_per_second,
                    static_cast<double>(outcome.updates) / std::max<double>(static_cast<double>(outcome.steps), 1.0),
                    outcome.eval_return);
        std::fflush(stdout);
      }
    }
  } catch (const std::exception& error) {
    std::fprintf(stderr, "apex: %s\n", error.what());
    return 1;
  }

  std::printf("\nat %g s of wall time (median rates, mean and min eval return over %d seed(s)):\n", seconds, seeds);
  std::printf("%-8s %6s %10s %10s %12s %12s %10s\n", "policy", "actors", "steps/s", "updates/s", "upd/step",
              "eval mean", "eval min");
  for (size_t r = 0; r < rows.size(); ++r) {
    const Summary& summary = summaries[r];
    double mean = 0.0;
    for (double value : summary.evals) mean += value / static_cast<double>(summary.evals.size());
    const double steps = median(summary.steps_per_second);
    const double updates = median(summary.updates_per_second);
    std::printf("%-8s %6d %10.0f %10.0f %12.3f %12.1f %10.1f\n", rows[r].policy.c_str(), rows[r].actors, steps, updates,
                updates / std::max(steps, 1e-9), mean, *std::min_element(summary.evals.begin(), summary.evals.end()));
  }
  std::printf("\nload average at the end %s\n", concord::bench::load_average().c_str());
  return 0;
}
