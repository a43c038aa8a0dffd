// dqn_speed: how fast Concord's DQN runs CleanRL dqn.py's CartPole-v1 setup, and what it learns.
//
// configs/dqn_cartpole.toml holds dqn.py's defaults (500k steps, 1 env, a 10k replay, batch 128
// every 10 steps once 10k steps are in, target copied every 500 steps, epsilon 1 -> 0.05 over
// half the run, a 120-84 ReLU MLP, Adam 2.5e-4). Per seed: env steps/s, wall time, the share of
// time spent learning (the rest is acting, stepping the env and storing transitions), the
// deterministic evaluation return over 10 episodes at the end (environments seeded apart from
// training's, as `concord eval` seeds them), and peak resident memory.
//
// The baseline is dqn.py itself on this machine kind: with --cleanrl PATH (dqn.py; --python: the
// interpreter that has torch and Gymnasium) it runs each seed right after Concord's runs of that
// seed, for the same steps, so that both see the same machine and load (bench/README.md: how to
// set it up); without it, its figures as the issue measured them (about 4,100 steps/s, 125 s for
// 500k steps; Gymnasium 1.4, Debian's torch 1.13, CPU) are quoted. Targets: 10x its steps/s,
// eval return >= 475. Also reported, for both: the time to the first 20-episode mean of 475.
//
// Each policy of --policies runs every seed: `single` (the serial loop) and `async_learner` (the
// same loop with acting on a second thread, parameters at most policy.async_learner.max_policy_lag
// updates old) by default.
//
//   dqn_speed [--seeds N] [--policies P ...] [--total-timesteps N] [--set key=value ...] [--quick]
//             [--cleanrl PATH [--python PYTHON]]
#include <sys/resource.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "concord/cli/run_config.h"
#include "concord/cli/run_context.h"
#include "concord/cli/training_run.h"
#include "concord/core/episode_stats.h"
#include "concord/core/timer.h"
#include "concord/policies/runtime/evaluation.h"
#include "machine_load.h"
#include "python_baseline.h"

namespace {

constexpr double kCleanRlStepsPerSecond = 4100.0;
constexpr double kCleanRlSeconds = 125.0;
constexpr int kEvalEpisodes = 10;
constexpr double kSolvedReturn = 475.0;
constexpr int kSolvedWindow = 20;
// A seed that never solved, in medians of times; a median halfway to it (an even count of seeds,
// half of them unsolved) is unsolved too.
constexpr double kNeverSolved = 1e300;

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
  std::optional<double> solved_seconds;  // first 20-episode mean of 475
};

std::string seconds_or_dash(const std::optional<double>& seconds) {
  if (!seconds) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", *seconds);
  return text;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

Outcome run(const concord::core::Config& base, const std::string& policy, int64_t seed) {
  concord::core::Config config = base;
  config.set("run.seed", seed, "--seeds");
  config.set("train.policy", policy, "--policies");
  concord::cli::TrainingRun training(config);
  concord::policies::TrainingState state;
  std::vector<double> returns;
  concord::core::EpisodeStats recent(kSolvedWindow);
  Outcome outcome;
  concord::core::Stopwatch clock;
  concord::policies::TrainingCallbacks callbacks;
  callbacks.on_episode = [&](double episode_return, int64_t episode_length) {
    returns.push_back(episode_return);
    recent.add(episode_return, episode_length);
    if (!outcome.solved_seconds && recent.count() >= kSolvedWindow && *recent.recent_mean_return() >= kSolvedReturn) {
      outcome.solved_seconds = clock.elapsed_seconds();
    }
  };
  callbacks.on_update = [&](const concord::policies::TrainingState&, const concord::algos::Metrics& metrics,
                            const concord::core::EpisodeStats&) {
    outcome.update_seconds = metrics.at("time/update_seconds");
  };
  clock.restart();
  training.train(state, callbacks);
  outcome.seconds = clock.elapsed_seconds();
  outcome.steps = state.global_step;
  outcome.updates = state.updates;
  const size_t last = std::min<size_t>(20, returns.size());
  for (size_t i = returns.size() - last; i < returns.size(); ++i) outcome.final_return += returns[i] / last;

  concord::envs::VectorEnvConfig eval_env = concord::cli::vector_env_config(config);
  eval_env.seed = static_cast<uint64_t>(seed + concord::policies::runtime::kEvalSeedOffset);
  const concord::policies::runtime::ReturnSummary eval = concord::policies::runtime::summarize_returns(
      concord::policies::runtime::evaluate_episodes(training.learner(), eval_env, kEvalEpisodes));
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
  std::string cleanrl_script, python = "python3";
  app.add_option("--cleanrl", cleanrl_script,
                 "CleanRL's dqn.py: run it for the same steps and seeds, alternating with Concord's runs "
                 "(bench/README.md)");
  app.add_option("--python", python, "Interpreter for --cleanrl, with torch and Gymnasium (default: python3)");
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

  if (!cleanrl_script.empty() && !std::filesystem::is_regular_file(cleanrl_script)) {
    std::fprintf(stderr, "dqn_speed: --cleanrl %s: no such file (bench/README.md: how to fetch dqn.py)\n",
                 cleanrl_script.c_str());
    return 2;
  }
  const int64_t steps = config.get_int("train.total_timesteps");

  std::printf("dqn_speed: %s, %d seed(s), %lld steps each; load average %s\n", config_file.c_str(), seeds,
              static_cast<long long>(steps), concord::bench::load_average().c_str());
  std::printf("\n%-14s %-5s %9s %9s %10s %8s %10s %16s %9s %9s\n", "policy", "seed", "steps", "wall s", "steps/s",
              "learn %", "final ret", "eval (10 ep)", "solved s", "peak MiB");
  const std::string baseline_name = "dqn.py";
  std::vector<std::string> names = policies;
  if (!cleanrl_script.empty()) names.push_back(baseline_name);
  std::map<std::string, std::vector<double>> rates, walls, evals, solved;
  for (int seed = 1; seed <= seeds; ++seed) {
    // Seeds outside, policies inside, dqn.py last: each seed's runs lie close together in time.
    for (const std::string& policy : policies) {
      Outcome outcome;
      try {
        outcome = run(config, policy, seed);
      } catch (const std::exception& error) {
        std::fprintf(stderr, "dqn_speed: %s: %s\n", policy.c_str(), error.what());
        return 1;
      }
      const double rate = static_cast<double>(outcome.steps) / outcome.seconds;
      rates[policy].push_back(rate);
      walls[policy].push_back(outcome.seconds);
      evals[policy].push_back(outcome.eval_return);
      solved[policy].push_back(outcome.solved_seconds.value_or(kNeverSolved));
      std::printf("%-14s %-5d %9lld %9.1f %10.0f %7.1f%% %10.1f %8.1f +- %5.1f %9s %9.1f\n", policy.c_str(), seed,
                  static_cast<long long>(outcome.steps), outcome.seconds, rate,
                  100.0 * outcome.update_seconds / outcome.seconds, outcome.final_return, outcome.eval_return,
                  outcome.eval_std, seconds_or_dash(outcome.solved_seconds).c_str(), peak_rss_mib());
      std::fflush(stdout);
    }
    if (cleanrl_script.empty()) continue;
    const std::optional<concord::bench::BaselineOutcome> ran =
        concord::bench::run_cleanrl("dqn_speed", python, cleanrl_script, seed, steps, kSolvedReturn, kSolvedWindow);
    if (!ran) return 1;
    const concord::bench::BaselineOutcome& baseline = *ran;
    rates[baseline_name].push_back(baseline.steps_per_second);
    walls[baseline_name].push_back(baseline.train_seconds);
    solved[baseline_name].push_back(baseline.solved_seconds.value_or(kNeverSolved));
    std::printf("%-14s %-5d %9lld %9.1f %10.0f %8s %10.1f %16s %9s %9.1f   (+%.1f s start-up, %.1f s wall)\n",
                baseline_name.c_str(), seed, static_cast<long long>(baseline.steps), baseline.train_seconds,
                baseline.steps_per_second, "-", baseline.final_return, "-",
                seconds_or_dash(baseline.solved_seconds).c_str(), baseline.peak_rss_mib, baseline.start_seconds,
                baseline.wall_seconds);
    std::fflush(stdout);
  }

  const bool measured = !cleanrl_script.empty();
  const double baseline_rate = measured ? median(rates[baseline_name]) : kCleanRlStepsPerSecond;
  std::printf("\n%-28s %10s %9s %12s %9s %9s\n", "", "steps/s", "wall s", "eval return", "solved s", "speed-up");
  for (const std::string& name : names) {
    const bool is_baseline = name == baseline_name;
    double mean_eval = 0.0;
    for (double value : evals[name]) mean_eval += value / static_cast<double>(evals[name].size());
    const double median_solved = median(solved[name]);
    char eval_text[32] = "-";
    if (!is_baseline) std::snprintf(eval_text, sizeof eval_text, "%.1f", mean_eval);
    std::string per_seed;
    if (measured && !is_baseline) {
      for (size_t i = 0; i < rates[name].size(); ++i) {
        char pair[48];
        std::snprintf(pair, sizeof pair, "%s%.1fx", i ? " " : "", rates[name][i] / rates[baseline_name][i]);
        per_seed += pair;
      }
      per_seed = ", per seed " + per_seed;
    }
    std::printf("%-28s %10.0f %9.1f %12s %9s %8.1fx   (median rate, wall and solved, mean eval over seeds%s)\n",
                (is_baseline ? "CleanRL dqn.py, this run" : "Concord dqn (" + name + ")").c_str(), median(rates[name]),
                median(walls[name]), eval_text,
                median_solved < kNeverSolved / 2 ? seconds_or_dash(median_solved).c_str() : "-",
                median(rates[name]) / baseline_rate, per_seed.c_str());
  }
  if (!measured) {
    std::printf("%-28s %10.0f %9.1f %12s %9s %9s   (quoted, not run: see the header; --cleanrl PATH runs it)\n",
                "CleanRL dqn.py, this machine", kCleanRlStepsPerSecond, kCleanRlSeconds, "-", "-", "1.0x");
  }
  std::printf("\ntargets: 10x dqn.py's steps/s, eval return >= 475\n");
  return 0;
}
