// apex: DQN on CartPole-v1 under the `apex` policy (Ape-X on threads) with 1, 2 and 4 actors,
// beside `single`, at a fixed wall time.
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
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "concord/cli/run_config.h"
#include "concord/cli/run_context.h"
#include "concord/cli/training_run.h"
#include "concord/core/timer.h"
#include "concord/policies/evaluation.h"
#include "machine_load.h"

namespace {

constexpr int kEvalEpisodes = 10;

struct Outcome {
  int64_t steps = 0;
  int64_t updates = 0;
  double seconds = 0.0;
  double eval_return = 0.0;
};

Outcome run(concord::core::Config config, const std::string& policy, int actors, int64_t seed, double seconds) {
  config.set("run.seed", seed, "--seeds");
  config.set("train.policy", policy, "apex bench");
  if (policy == "apex") config.set("policy.apex.actors", int64_t{actors}, "--actors");
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
  eval_env.seed = static_cast<uint64_t>(seed + concord::policies::kEvalSeedOffset);
  outcome.eval_return = concord::policies::summarize_returns(
                            concord::policies::evaluate_episodes(training.learner(), eval_env, kEvalEpisodes))
                            .mean;
  return outcome;
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

  std::printf("apex: %s, %g s per run, seeds 1..%d; load average %s\n", config_file.c_str(), seconds, seeds,
              concord::bench::load_average().c_str());
  std::printf("\n%-8s %6s %5s %10s %10s %10s %12s %12s\n", "policy", "actors", "seed", "env steps", "steps/s",
              "updates/s", "upd/step", "eval return");
  struct Row {
    std::string policy;
    int actors;
  };
  std::vector<Row> rows = {{"single", 1}};
  for (int actors : actor_counts) rows.push_back({"apex", actors});
  struct Summary {
    std::vector<double> steps_per_second, updates_per_second, evals;
  };
  std::vector<Summary> summaries(rows.size());
  try {
    for (int seed = 1; seed <= seeds; ++seed) {
      for (size_t r = 0; r < rows.size(); ++r) {
        const Outcome outcome = run(config, rows[r].policy, rows[r].actors, seed, seconds);
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
