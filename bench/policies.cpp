// policies: the same algorithm code under each in-process distribution policy.
//
// For every policy and seed: env steps/s, learner updates/s, wall time until the mean return of
// the last 20 finished episodes first reaches the target ("solved"; the run stops there or at the
// step budget) and the evaluation return of the final policy over 20 episodes.
// Baseline: the `single` policy, measured in the same run.
//
//   policies                                   A2C on CartPole-v1, target 475 (the defaults)
//   policies --env MinAtar/Breakout-v1 --algo ppo --target 10 --stochastic-eval
//            --set algo.torso=grid_cnn --set algo.shared_torso=true ...
//                                              PPO with MinAtar's network on pixel-class work
//
// Reliability (--repeat N --config FILE): does a policy learn every time? Each policy trains the
// shipped config as `concord train --config FILE --policy P [--num-envs E]` does (cli::TrainingRun,
// the whole budget, no early stop), N times with seed S (unless --seeds-only) and once with each of seeds S..S+N-1
// (unless --runs-only; S = 1, or --first-seed S to sample other seeds than an earlier record's), and the final policy
// is evaluated as `concord eval` does (10 deterministic episodes, or --stochastic-eval). A run fails when its
// evaluation return is below --target. Every policy runs the same algorithm settings: the config's, plus V-trace for
// A2C (which a central_inference lag above 0 needs, and which is plain n-step returns without a lag).
//
//   policies --repeat 20 --config configs/a2c_cartpole.toml --target 475
#include <torch/torch.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <numeric>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "concord/algos/algorithm_registry.h"
#include "concord/cli/run_config.h"
#include "concord/cli/run_context.h"
#include "concord/cli/training_run.h"
#include "concord/core/episode_stats.h"
#include "concord/core/timer.h"
#include "concord/envs/registry.h"
#include "concord/policies/policy_registry.h"
#include "concord/policies/runtime/evaluation.h"
#include "machine_load.h"

namespace {

using namespace concord;

constexpr int kSolvedWindow = 20;

// What every run of one invocation shares.
struct Setup {
  std::string env_id = "CartPole-v1";
  std::string algo = "a2c";
  double target = 475.0;
  bool stochastic_eval = false;
  std::vector<std::string> overrides;  // --set, applied before each policy's own
};

struct Outcome {
  int64_t steps = 0;
  int64_t updates = 0;
  double seconds = 0.0;
  std::optional<double> solved_seconds;
  double eval_return = 0.0;
};

Outcome run(const Setup& setup, const std::string& policy_name, const std::vector<std::string>& overrides, int num_envs,
            int env_threads, int64_t max_steps, uint64_t seed) {
  torch::manual_seed(seed);
  core::ConfigSchema schema;
  algos::declare_algorithm_keys(schema);
  policies::declare_policy_keys(schema);
  core::Config config(schema);
  for (const std::string& assignment : setup.overrides) config.apply_override(assignment);
  for (const std::string& assignment : overrides) config.apply_override(assignment);
  envs::VectorEnvConfig env;
  env.env_id = setup.env_id;
  env.num_envs = num_envs;
  env.num_threads = env_threads;
  env.seed = seed;
  const envs::EnvSpec spec = envs::make_env(setup.env_id)->spec();
  std::unique_ptr<algos::OnPolicyLearner> learner =
      algos::as_on_policy(algos::make_learner(setup.algo, config, spec.observation_space, spec.action_space));
  std::unique_ptr<policies::Policy> policy =
      policies::make_policy(policy_name, policies::PolicyContext{config, env, *learner, torch::kCPU});

  Outcome outcome;
  concord::core::EpisodeStats recent(kSolvedWindow);
  core::Stopwatch clock;
  policies::TrainingCallbacks callbacks;
  callbacks.on_episode = [&](double episode_return, int64_t episode_length) {
    recent.add(episode_return, episode_length);
    if (!outcome.solved_seconds && recent.count() >= kSolvedWindow && *recent.recent_mean_return() >= setup.target) {
      outcome.solved_seconds = clock.elapsed_seconds();
    }
  };
  callbacks.should_stop = [&] { return outcome.solved_seconds.has_value(); };
  policies::TrainingState state;
  policy->train(state, max_steps, /*checkpoint_interval_steps=*/int64_t{1} << 60, callbacks);
  outcome.seconds = clock.elapsed_seconds();
  outcome.steps = state.global_step;
  outcome.updates = state.updates;
  envs::VectorEnvConfig eval_env = env;
  eval_env.seed = seed + policies::runtime::kEvalSeedOffset;
  const std::vector<double> returns =
      policies::runtime::evaluate_episodes(*learner, eval_env, 20, setup.stochastic_eval);
  outcome.eval_return = std::accumulate(returns.begin(), returns.end(), 0.0) / static_cast<double>(returns.size());
  return outcome;
}

struct PolicyCase {
  std::string label;
  std::string policy;
  int env_threads;
  std::vector<std::string> overrides;
  int workers = 1;  // hogwild's: each worker steps env.num_envs, so the speed rows give it total / workers
};

// One run of the shipped config under `policy`, trained and evaluated as the CLI does.
double train_and_evaluate(const std::string& config_file, const std::vector<std::string>& overrides,
                          const PolicyCase& policy, int num_envs, int64_t seed, bool stochastic_eval) {
  cli::RunFlags flags;
  flags.config_files = {config_file};
  flags.overrides = policy.overrides;
  flags.overrides.insert(flags.overrides.end(), overrides.begin(), overrides.end());
  flags.overrides.push_back("train.policy=\"" + policy.policy + "\"");
  flags.overrides.push_back("env.num_threads=" + std::to_string(policy.env_threads));
  flags.seed = seed;
  flags.num_envs = num_envs;
  const core::Config config = cli::resolve_config(flags);
  cli::TrainingRun training(config);
  policies::TrainingState state;
  training.train(state, {});
  envs::VectorEnvConfig eval_env = cli::vector_env_config(config);
  eval_env.seed = static_cast<uint64_t>(seed + policies::runtime::kEvalSeedOffset);
  const std::vector<double> returns =
      policies::runtime::evaluate_episodes(training.learner(), eval_env, 10, stochastic_eval);
  return std::accumulate(returns.begin(), returns.end(), 0.0) / static_cast<double>(returns.size());
}

// --repeat: the failure rate of every policy, over N runs of seed S and over seeds S..S+N-1 (S = first_seed).
// seeds_only skips the runs of seed S, which repeat one run for policies whose runs are reproducible;
// runs_only skips the seeds, for a policy whose seeds were measured on the same code.
void repeat_mode(const std::string& config_file, const std::vector<std::string>& overrides, int repeat, int num_envs,
                 double target, bool stochastic_eval, const std::vector<std::string>& only, bool seeds_only,
                 bool runs_only, int64_t first_seed) {
  core::Config shipped(cli::concord_schema());
  shipped.merge_file(config_file);
  const std::string algo = shipped.get_string("train.algo");
  const std::vector<std::string> every =
      algo == "a2c" ? std::vector<std::string>{"algo.a2c.vtrace=true"} : std::vector<std::string>{};
  const std::vector<PolicyCase> cases = {
      {"single", "single", 1, every},
      {"sync_vector", "sync_vector", 2, every},
      {"hogwild", "hogwild", 1, every},
      {"central_inf", "central_inference", 1, every},
      {"async_learn", "async_learner", 1, every},
  };
  const int64_t envs = num_envs > 0 ? num_envs : shipped.get_int("env.num_envs");
  std::printf("policies --repeat %d: %s, %lld envs, a run fails below %g (%s evaluation, 10 episodes)\n", repeat,
              config_file.c_str(), static_cast<long long>(envs), target,
              stochastic_eval ? "stochastic" : "deterministic");
  std::printf("settings:");
  for (const std::string& assignment : overrides) std::printf(" %s", assignment.c_str());
  std::printf("%s\nmachine: %u hardware threads, load average at start %s\n", overrides.empty() ? " the config's" : "",
              std::thread::hardware_concurrency(), bench::load_average().c_str());
  std::printf("%-12s %-10s %s\n", "policy", "runs", "evaluation returns (run order)");
  for (const PolicyCase& c : cases) {
    if (!only.empty() && std::find(only.begin(), only.end(), c.policy) == only.end()) continue;
    int failures[2] = {0, 0};
    for (int mode = seeds_only ? 1 : 0; mode < (runs_only ? 1 : 2); ++mode) {
      const std::string runs =
          mode == 0 ? "seed " + std::to_string(first_seed)
                    : "seeds " + std::to_string(first_seed) + ".." + std::to_string(first_seed + repeat - 1);
      std::printf("%-12s %-10s", c.label.c_str(), runs.c_str());
      for (int run = 0; run < repeat; ++run) {
        const int64_t seed = mode == 0 ? first_seed : first_seed + run;
        // A run that stops with an error (e.g. a loss that became NaN) is a failure, and says why.
        try {
          const double eval_return = train_and_evaluate(config_file, overrides, c, num_envs, seed, stochastic_eval);
          if (eval_return < target) ++failures[mode];
          std::printf(" %.4g", eval_return);  // 474.6, not a "475" that fails
        } catch (const std::exception& error) {
          ++failures[mode];
          std::printf(" [error: %s]", error.what());
        }
        std::fflush(stdout);
      }
      std::printf("\n");
    }
    if (seeds_only) {
      std::printf("%-12s failures: %d of %d seeds\n", c.label.c_str(), failures[1], repeat);
    } else if (runs_only) {
      std::printf("%-12s failures: %d of %d runs of seed %lld\n", c.label.c_str(), failures[0], repeat,
                  static_cast<long long>(first_seed));
    } else {
      std::printf("%-12s failures: %d of %d runs of seed %lld, %d of %d seeds\n", c.label.c_str(), failures[0], repeat,
                  static_cast<long long>(first_seed), failures[1], repeat);
    }
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"One algorithm under every in-process distribution policy"};
  Setup setup;
  app.add_option("--env", setup.env_id, "Environment id");
  app.add_option("--algo", setup.algo, "Algorithm (a2c, ppo)");
  app.add_option("--target", setup.target, "Return that counts as solved (mean of the last 20 episodes)");
  app.add_flag("--stochastic-eval", setup.stochastic_eval, "Evaluate with sampled actions instead of the mode");
  app.add_option("--set", setup.overrides, "A config assignment for every run (repeatable)");
  int seeds = 3;
  int num_envs = 16;
  int64_t max_steps = 1'000'000;
  app.add_option("--seeds", seeds, "Seeds per policy")->check(CLI::Range(1, 100));
  CLI::Option* num_envs_option =
      app.add_option("--num-envs", num_envs, "Total environments (--repeat: the config's unless given)")
          ->check(CLI::Range(1, 4096));
  app.add_option("--max-steps", max_steps, "Step budget per run (the run stops when solved)")
      ->check(CLI::PositiveNumber);
  std::vector<std::string> only;
  app.add_option("--policies", only, "Run only these policies (default: all)");
  int repeat = 0;
  std::string config_file;
  app.add_option("--repeat", repeat, "Reliability mode: N runs of seed 1 and seeds 1..N per policy (needs --config)")
      ->check(CLI::Range(1, 1000));
  app.add_option("--config", config_file, "The shipped config that --repeat trains")->check(CLI::ExistingFile);
  bool seeds_only = false;
  CLI::Option* seeds_only_flag =
      app.add_flag("--seeds-only", seeds_only, "--repeat: only the N seeds, without the N runs of the first one");
  bool runs_only = false;
  app.add_flag("--runs-only", runs_only, "--repeat: only the N runs of the first seed, without the N seeds")
      ->excludes(seeds_only_flag);
  int64_t first_seed = 1;
  app.add_option("--first-seed", first_seed, "--repeat: seeds S..S+N-1 (and N runs of seed S) instead of 1..N")
      ->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  torch::set_num_threads(1);
  if (repeat > 0) {
    if (config_file.empty()) {
      std::fprintf(stderr, "policies: --repeat needs --config FILE\n");
      return 2;
    }
    repeat_mode(config_file, setup.overrides, repeat, num_envs_option->count() > 0 ? num_envs : 0, setup.target,
                setup.stochastic_eval, only, seeds_only, runs_only, first_seed);
    return 0;
  }

  // Lagged experience needs V-trace and a tuned A2C (the setting of the policies' learning test);
  // that row is therefore not the same algorithm configuration as the others. PPO's clipped
  // ratio takes the lag as it is.
  // Lag 1: GA3C's arrangement, agents collecting while the learner trains.
  std::vector<std::string> central = {"policy.central_inference.actors=8", "policy.central_inference.training_batch=2",
                                      "policy.central_inference.queue_capacity=8",
                                      "policy.central_inference.max_policy_lag=1"};
  if (setup.algo == "a2c") {
    central.insert(central.end(), {"algo.a2c.vtrace=true", "algo.a2c.optimizer=\"adam\"", "algo.a2c.learning_rate=1e-3",
                                   "algo.a2c.num_steps=16", "algo.a2c.ent_coef=0.0", "algo.a2c.anneal_lr=true"});
  }
  const std::vector<PolicyCase> cases = {
      {"single", "single", 1, {}},
      {"sync_vector", "sync_vector", 2, {}},
      {"hogwild x2", "hogwild", 1, {"policy.hogwild.actors=2"}, 2},
      {"hogwild x4", "hogwild", 1, {"policy.hogwild.actors=4"}, 4},
      {"central_inf", "central_inference", 1, central},
  };

  std::printf("policies: %s on %s, %d envs in total, %d seeds, budget %lld steps; solved = 20-episode mean >= %g\n",
              setup.algo.c_str(), setup.env_id.c_str(), num_envs, seeds, static_cast<long long>(max_steps),
              setup.target);
  std::printf("settings:");
  for (const std::string& assignment : setup.overrides) std::printf(" %s", assignment.c_str());
  std::printf("%s\nmachine: %u hardware threads, load average at start %s\n",
              setup.overrides.empty() ? " defaults" : "", std::thread::hardware_concurrency(),
              bench::load_average().c_str());
  std::printf("%-12s %4s %9s %8s %9s %10s %10s %9s\n", "policy", "seed", "steps", "seconds", "steps/s", "updates/s",
              "solved at", "eval ret");
  for (const PolicyCase& c : cases) {
    if (!only.empty() && std::find(only.begin(), only.end(), c.policy) == only.end()) continue;
    std::vector<double> rates;
    for (int seed = 1; seed <= seeds; ++seed) {
      if (num_envs % c.workers != 0) {  // every row steps num_envs envs in all, or none
        std::printf("%-12s %4d refused: %d envs in total do not divide among %d workers\n", c.label.c_str(), seed,
                    num_envs, c.workers);
        continue;
      }
      Outcome o;
      try {
        o = run(setup, c.policy, c.overrides, num_envs / c.workers, c.env_threads, max_steps,
                static_cast<uint64_t>(seed));
      } catch (const std::exception& error) {
        std::printf("%-12s %4d refused: %s\n", c.label.c_str(), seed, error.what());
        continue;
      }
      rates.push_back(static_cast<double>(o.steps) / o.seconds);
      char solved[32] = "not reached";
      if (o.solved_seconds) std::snprintf(solved, sizeof solved, "%.2f s", *o.solved_seconds);
      std::printf("%-12s %4d %9lld %8.2f %9.0f %10.0f %10s %9.1f\n", c.label.c_str(), seed,
                  static_cast<long long>(o.steps), o.seconds, rates.back(), static_cast<double>(o.updates) / o.seconds,
                  solved, o.eval_return);
      std::fflush(stdout);
    }
    if (rates.empty()) continue;
    std::sort(rates.begin(), rates.end());
    std::printf("%-12s median steps/s %.0f\n", c.label.c_str(), rates[rates.size() / 2]);
  }
  return 0;
}
