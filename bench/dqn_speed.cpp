// dqn_speed: how fast Concord's DQN runs CleanRL dqn.py's CartPole-v1 setup, and what it learns.
//
// configs/dqn_cartpole.toml holds dqn.py's defaults (500k steps, 1 env, a 10k replay, batch 128
// every 10 steps once 10k steps are in, target copied every 500 steps, epsilon 1 -> 0.05 over
// half the run, a 120-84 ReLU MLP, Adam 2.5e-4). Per seed: env steps/s, wall time, the share of
// time spent learning (the rest is acting, stepping the env and storing transitions), the
// deterministic evaluation return over 10 episodes at the end (environments seeded apart from
// training's, as `concord eval` seeds them), and peak resident memory.
//
// The baseline is dqn.py itself on this machine kind, as the issue measured it (about 4,100
// steps/s, 125 s for 500k steps; Gymnasium 1.4, Debian's torch 1.13, CPU): Gymnasium is not
// installable here, so it is quoted, not run. Targets: 10x its steps/s, eval return >= 475.
//
// Each policy of --policies runs every seed: `single` (the serial loop) and `async_learner` (the
// same loop with acting on a second thread, parameters at most policy.async_learner.max_policy_lag
// updates old) by default.
//
//   dqn_speed [--seeds N] [--policies P ...] [--total-timesteps N] [--set key=value ...] [--quick]
#include <sys/resource.h>

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

constexpr double kCleanRlStepsPerSecond = 4100.0;
constexpr double kCleanRlSeconds = 125.0;
constexpr int kEvalEpisodes = 10;

double peak_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

struct Outcome {
  int64_t steps = 0;
  int64_t updates = 0;
  double seconds = 0.0;
  double update_seconds = 0.0;
  double final_return = 0.0;  // mean training return of the last 20 episodes
  double eval_return = 0.0;
  double eval_std = 0.0;
};

Outcome run(const concord::core::Config& base, const std::string& policy, int64_t seed) {
  concord::core::Config config = base;
  config.set("run.seed", seed, "--seeds");
  config.set("train.policy", policy, "--policies");
  concord::cli::TrainingRun training(config);
  concord::policies::TrainingState state;
  std::vector<double> returns;
  Outcome outcome;
  concord::policies::TrainingCallbacks callbacks;
  callbacks.on_episode = [&](double episode_return, int64_t) { returns.push_back(episode_return); };
  callbacks.on_update = [&](const concord::policies::TrainingState&, const concord::algos::Metrics& metrics,
                            const concord::core::EpisodeStats&) {
    outcome.update_seconds = metrics.at("time/update_seconds");
  };
  concord::core::Stopwatch clock;
  training.train(state, callbacks);
  outcome.seconds = clock.elapsed_seconds();
  outcome.steps = state.global_step;
  outcome.updates = state.updates;
  const size_t last = std::min<size_t>(20, returns.size());
  for (size_t i = returns.size() - last; i < returns.size(); ++i) outcome.final_return += returns[i] / last;

  concord::envs::VectorEnvConfig eval_env = concord::cli::vector_env_config(config);
  eval_env.seed = static_cast<uint64_t>(seed + concord::policies::kEvalSeedOffset);
  const concord::policies::ReturnSummary eval = concord::policies::summarize_returns(
      concord::policies::evaluate_episodes(training.learner(), eval_env, kEvalEpisodes));
  outcome.eval_return = eval.mean;
  outcome.eval_std = eval.std;
  return outcome;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"dqn_speed: Concord's DQN on CleanRL dqn.py's CartPole-v1 setup, beside dqn.py's figures"};
  int seeds = 3;
  int64_t total_timesteps = 0;
  std::vector<std::string> overrides;
  bool quick = false;
  std::vector<std::string> policies = {"single", "async_learner"};
  std::string config_file = std::string(CONCORD_SOURCE_DIR) + "/configs/dqn_cartpole.toml";
  app.add_option("--seeds", seeds, "Seeds 1..N")->check(CLI::Range(1, 100));
  app.add_option("--total-timesteps", total_timesteps, "Steps per seed (default: the config's 500k)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  app.add_option("--config", config_file, "Config file (default: configs/dqn_cartpole.toml)");
  app.add_option("--policies", policies, "Policies to run (default: single async_learner)");
  app.add_option("--set", overrides, "key=value overrides, as `concord train --set`");
  app.add_flag("--quick", quick, "Smoke run: 1 seed, 11k steps (a few updates)");
  CLI11_PARSE(app, argc, argv);

  concord::core::Config config(concord::cli::concord_schema());
  try {
    config.merge_file(config_file);
    for (const std::string& override : overrides) config.apply_override(override);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "dqn_speed: %s\n", error.what());
    return 2;
  }
  if (quick) {
    seeds = 1;
    total_timesteps = 11'000;
  }
  if (total_timesteps > 0) config.set("train.total_timesteps", total_timesteps, "--total-timesteps");
  config.set("train.checkpoint_interval_steps", int64_t{1} << 40, "dqn_speed");

  std::printf("dqn_speed: %s, %d seed(s), %lld steps each; load average %s\n", config_file.c_str(), seeds,
              static_cast<long long>(config.get_int("train.total_timesteps")), concord::bench::load_average().c_str());
  std::printf("\n%-14s %-5s %9s %9s %10s %8s %10s %16s %9s\n", "policy", "seed", "steps", "wall s", "steps/s",
              "learn %", "final ret", "eval (10 ep)", "peak MiB");
  struct Summary {
    double median_rate = 0.0, median_wall = 0.0, mean_eval = 0.0;
  };
  std::vector<Summary> summaries;
  for (const std::string& policy : policies) {
    std::vector<double> rates, walls, evals;
    for (int seed = 1; seed <= seeds; ++seed) {
      Outcome outcome;
      try {
        outcome = run(config, policy, seed);
      } catch (const std::exception& error) {
        std::fprintf(stderr, "dqn_speed: %s: %s\n", policy.c_str(), error.what());
        return 1;
      }
      const double rate = static_cast<double>(outcome.steps) / outcome.seconds;
      rates.push_back(rate);
      walls.push_back(outcome.seconds);
      evals.push_back(outcome.eval_return);
      std::printf("%-14s %-5d %9lld %9.1f %10.0f %7.1f%% %10.1f %8.1f +- %5.1f %9.1f\n", policy.c_str(), seed,
                  static_cast<long long>(outcome.steps), outcome.seconds, rate,
                  100.0 * outcome.update_seconds / outcome.seconds, outcome.final_return, outcome.eval_return,
                  outcome.eval_std, peak_rss_mib());
      std::fflush(stdout);
    }
    std::sort(rates.begin(), rates.end());
    std::sort(walls.begin(), walls.end());
    Summary summary;
    summary.median_rate = rates[rates.size() / 2];
    summary.median_wall = walls[walls.size() / 2];
    for (double value : evals) summary.mean_eval += value / static_cast<double>(evals.size());
    summaries.push_back(summary);
  }
  std::printf("\n%-28s %10s %9s %12s %9s\n", "", "steps/s", "wall s", "eval return", "speed-up");
  for (size_t i = 0; i < policies.size(); ++i) {
    const Summary& summary = summaries[i];
    std::printf("%-28s %10.0f %9.1f %12.1f %8.1fx   (median rate and wall, mean eval over seeds)\n",
                ("Concord dqn (" + policies[i] + ")").c_str(), summary.median_rate, summary.median_wall,
                summary.mean_eval, summary.median_rate / kCleanRlStepsPerSecond);
  }
  std::printf("%-28s %10.0f %9.1f %12s %9s   (quoted, not run: see the header)\n", "CleanRL dqn.py, this machine",
              kCleanRlStepsPerSecond, kCleanRlSeconds, "-", "1.0x");
  std::printf("\ntargets: 10x dqn.py's steps/s, eval return >= 475\n");
  return 0;
}
