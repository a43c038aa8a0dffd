// ppo_speed: how fast Concord's PPO learns CartPole-v1 in one process, under `single` (one
// thread: collect, then learn) and `async_learner` (collect the next rollout on a second thread
// while learning from this one, one update of policy lag), each beside the other in one run.
//
// Two configurations, each over several seeds:
//   cleanrl  CleanRL ppo.py's exact defaults (4 envs x 128 steps, 4 minibatches, 4 epochs, 64-64
//            tanh, lr 2.5e-4 annealed, 500k steps): steps/s and wall time, beside ppo.py's own
//            figures on this machine;
//   fast     Concord's own choice for wall time to a solved policy, stopped once solved.
// "Solved" is the first time the mean return of the last 20 finished episodes reaches 475.
// Also reported: the share of time spent learning (the rest is acting and stepping envs) and the
// process's peak resident memory.
//
// With --cleanrl PATH (ppo.py; --python: the interpreter that has torch and Gymnasium), ppo.py
// itself runs each seed of the cleanrl configuration right after Concord's runs of that seed, so
// that both see the same machine and load, and the table gives its steps/s, time to solved and
// peak memory beside Concord's, and their ratios (bench/README.md: how to set ppo.py up).
// Without it, ppo.py's figures are quoted, not measured.
#include <sys/resource.h>

#include <torch/torch.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "concord/algos/ppo.h"
#include "concord/core/episode_stats.h"
#include "concord/core/timer.h"
#include "concord/envs/vector_env.h"
#include "concord/policies/async_learner.h"
#include "concord/policies/single.h"
#include "machine_load.h"
#include "python_baseline.h"

namespace {

using concord::algos::Ppo;
using concord::algos::PpoConfig;

constexpr double kSolvedReturn = 475.0;
constexpr int kSolvedWindow = 20;
// A seed that never solved, in medians of times; a median halfway to it (an even count of seeds,
// half of them unsolved) is unsolved too.
constexpr double kNeverSolved = 1e300;
bool never_solved(double seconds) { return seconds >= kNeverSolved / 2; }

struct Setup {
  std::string name;
  int num_envs = 4;
  int64_t total_steps = 500'000;
  bool stop_when_solved = false;
  PpoConfig ppo;
};

struct Outcome {
  int64_t steps = 0;
  double seconds = 0.0;
  double update_seconds = 0.0;
  std::optional<double> solved_seconds;
  std::optional<int64_t> solved_steps;
  double final_return = 0.0;  // mean of the last 20 episodes
};

Setup cleanrl_setup() {
  Setup setup;
  setup.name = "cleanrl";
  setup.ppo.network.obs_shape = {4};
  setup.ppo.network.action_dim = 2;
  return setup;  // PpoConfig's defaults are ppo.py's.
}

Setup fast_setup() {
  Setup setup = cleanrl_setup();
  setup.name = "fast";
  // RL Zoo's CartPole gamma, lambda and entropy; fewer, larger steps than its 20 epochs of
  // lr 1e-3, because wall time, not samples, is the measure here (chosen by a sweep with
  // --fast-* flags, recorded in bench/RESULTS.md).
  setup.num_envs = 16;
  setup.total_steps = 300'000;
  setup.stop_when_solved = true;
  setup.ppo.num_steps = 32;
  setup.ppo.num_minibatches = 2;
  setup.ppo.update_epochs = 4;
  setup.ppo.gamma = 0.98;
  setup.ppo.gae_lambda = 0.8;
  setup.ppo.learning_rate = 3e-3;
  setup.ppo.ent_coef = 0.0;
  return setup;
}

std::unique_ptr<concord::policies::Policy> make_policy(const std::string& name,
                                                       const concord::envs::VectorEnvConfig& env_config, Ppo& ppo) {
  auto env = std::make_unique<concord::envs::VectorEnv>(env_config);
  if (name == "async_learner") {
    return std::make_unique<concord::policies::AsyncLearnerPolicy>(concord::policies::AsyncLearnerConfig{},
                                                                   std::move(env), ppo, torch::kCPU, env_config.seed);
  }
  return std::make_unique<concord::policies::SinglePolicy>(std::move(env), ppo, torch::kCPU);
}

double peak_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

Outcome run(const Setup& setup, const std::string& policy_name, uint64_t seed) {
  torch::manual_seed(seed);
  concord::envs::VectorEnvConfig env_config;
  env_config.env_id = "CartPole-v1";
  env_config.num_envs = setup.num_envs;
  env_config.seed = seed;
  Ppo ppo(setup.ppo);
  const std::unique_ptr<concord::policies::Policy> policy = make_policy(policy_name, env_config, ppo);

  Outcome outcome;
  concord::policies::TrainingState state;
  concord::core::EpisodeStats recent(kSolvedWindow);
  concord::core::Stopwatch clock;
  concord::policies::TrainingCallbacks callbacks;
  callbacks.on_episode = [&](double episode_return, int64_t episode_length) {
    recent.add(episode_return, episode_length);
    if (!outcome.solved_seconds && recent.count() >= kSolvedWindow && *recent.recent_mean_return() >= kSolvedReturn) {
      outcome.solved_seconds = clock.elapsed_seconds();
      outcome.solved_steps = state.global_step;
    }
  };
  callbacks.on_update = [&](const concord::policies::TrainingState&, const concord::algos::Metrics& metrics,
                            const concord::core::EpisodeStats&) {
    outcome.update_seconds = metrics.at("time/update_seconds");
  };
  callbacks.should_stop = [&] { return setup.stop_when_solved && outcome.solved_seconds.has_value(); };
  policy->train(state, setup.total_steps, /*checkpoint_interval_steps=*/int64_t{1} << 60, callbacks);
  outcome.seconds = clock.elapsed_seconds();
  outcome.steps = state.global_step;
  outcome.final_return = recent.recent_mean_return().value_or(0.0);
  return outcome;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

std::string seconds_or_dash(const std::optional<double>& seconds) {
  if (!seconds) return "not reached";
  char text[32];
  std::snprintf(text, sizeof text, "%.2f s", *seconds);
  return text;
}

// A median of times in which kNeverSolved stands for a seed that never solved.
std::string median_seconds(const std::vector<double>& times) {
  const double value = times.empty() ? kNeverSolved : median(times);
  return never_solved(value) ? "not reached" : seconds_or_dash(value);
}

std::string ratio_text(double numerator, double denominator) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1fx", numerator / denominator);
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"PPO on CartPole-v1: steps/s and wall time to a solved policy, beside CleanRL's ppo.py"};
  int seeds = 5;
  int64_t cleanrl_steps = 500'000;
  bool skip_cleanrl = false;
  app.add_option("--seeds", seeds, "Seeds per configuration (1..seeds)")->check(CLI::Range(1, 100));
  app.add_option("--cleanrl-steps", cleanrl_steps, "Total steps of the cleanrl configuration")
      ->check(CLI::PositiveNumber);
  app.add_flag("--skip-cleanrl", skip_cleanrl, "Run only the fast configuration");
  bool skip_fast = false;
  app.add_flag("--skip-fast", skip_fast, "Run only the cleanrl configuration");
  std::string cleanrl_script, python = "python3";
  app.add_option("--cleanrl", cleanrl_script,
                 "CleanRL's ppo.py: run it for the cleanrl configuration's steps and seeds, alternating with "
                 "Concord's runs (bench/README.md)");
  app.add_option("--python", python, "Interpreter for --cleanrl, with torch and Gymnasium (default: python3)");
  std::vector<std::string> policies = {"single", "async_learner"};
  app.add_option("--policies", policies, "Policies to run each configuration under")
      ->check(CLI::IsMember({"single", "async_learner"}));
  Setup fast = fast_setup();
  app.add_option("--fast-envs", fast.num_envs, "fast: environments")->check(CLI::Range(1, 4096));
  app.add_option("--fast-steps", fast.ppo.num_steps, "fast: steps per env per rollout")->check(CLI::PositiveNumber);
  app.add_option("--fast-epochs", fast.ppo.update_epochs, "fast: epochs per update")->check(CLI::PositiveNumber);
  app.add_option("--fast-minibatches", fast.ppo.num_minibatches, "fast: minibatches per epoch")
      ->check(CLI::PositiveNumber);
  app.add_option("--fast-lr", fast.ppo.learning_rate, "fast: learning rate")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  torch::set_num_threads(1);

  std::vector<Setup> setups;
  if (!skip_cleanrl) {
    setups.push_back(cleanrl_setup());
    setups.back().total_steps = cleanrl_steps;
  }
  if (!skip_fast) setups.push_back(fast);
  if (!cleanrl_script.empty() && !std::filesystem::is_regular_file(cleanrl_script)) {
    std::fprintf(stderr, "ppo_speed: --cleanrl %s: no such file (bench/README.md: how to fetch ppo.py)\n",
                 cleanrl_script.c_str());
    return 2;
  }

  std::printf(
      "ppo_speed: PPO on CartPole-v1, %d seeds each; solved = 20-episode mean >= 475; machine: %u hardware "
      "threads, load average at start %s\n",
      seeds, std::thread::hardware_concurrency(), concord::bench::load_average().c_str());
  std::printf("%-8s %-13s %4s %9s %8s %9s %8s %12s %10s %9s %9s\n", "config", "policy", "seed", "steps", "seconds",
              "steps/s", "learn %", "solved at", "solved step", "final ret", "peak MiB");
  std::vector<double> baseline_rates, baseline_solved;  // ppo.py, over seeds
  for (const Setup& setup : setups) {
    const bool with_baseline = !cleanrl_script.empty() && setup.name == "cleanrl";
    std::map<std::string, std::vector<double>> rates, solved_times;
    std::map<std::string, int> unsolved;
    // Seeds outside, policies inside, ppo.py last: each seed's runs lie close together in time.
    for (int seed = 1; seed <= seeds; ++seed) {
      for (const std::string& policy : policies) {
        const Outcome outcome = run(setup, policy, static_cast<uint64_t>(seed));
        const double rate = static_cast<double>(outcome.steps) / outcome.seconds;
        rates[policy].push_back(rate);
        if (outcome.solved_seconds) {
          solved_times[policy].push_back(*outcome.solved_seconds);
        } else {
          ++unsolved[policy];
        }
        std::printf("%-8s %-13s %4d %9lld %8.2f %9.0f %7.0f%% %12s %10s %9.1f %9.1f\n", setup.name.c_str(),
                    policy.c_str(), seed, static_cast<long long>(outcome.steps), outcome.seconds, rate,
                    100.0 * outcome.update_seconds / outcome.seconds, seconds_or_dash(outcome.solved_seconds).c_str(),
                    outcome.solved_steps ? std::to_string(*outcome.solved_steps).c_str() : "-", outcome.final_return,
                    peak_rss_mib());
        std::fflush(stdout);
      }
      if (!with_baseline) continue;
      const std::optional<concord::bench::BaselineOutcome> ran = concord::bench::run_cleanrl(
          "ppo_speed", python, cleanrl_script, seed, setup.total_steps, kSolvedReturn, kSolvedWindow);
      if (!ran) return 1;
      const concord::bench::BaselineOutcome& baseline = *ran;
      baseline_rates.push_back(baseline.steps_per_second);
      baseline_solved.push_back(baseline.solved_seconds.value_or(kNeverSolved));
      std::printf("%-8s %-13s %4d %9lld %8.2f %9.0f %8s %12s %10s %9.1f %9.1f   (+%.1f s start-up, %.1f s wall)\n",
                  setup.name.c_str(), "ppo.py", seed, static_cast<long long>(baseline.steps), baseline.train_seconds,
                  baseline.steps_per_second, "-", seconds_or_dash(baseline.solved_seconds).c_str(),
                  baseline.solved_steps ? std::to_string(*baseline.solved_steps).c_str() : "-", baseline.final_return,
                  baseline.peak_rss_mib, baseline.start_seconds, baseline.wall_seconds);
      std::fflush(stdout);
    }
    for (const std::string& policy : policies) {
      std::vector<double>& times = solved_times[policy];
      // Unsolved seeds count as infinitely slow in the median.
      for (int i = 0; i < unsolved[policy]; ++i) times.push_back(kNeverSolved);
      std::printf("%-8s %-13s median steps/s %.0f, median time to solved %s (%d of %d seeds solved)\n",
                  setup.name.c_str(), policy.c_str(), median(rates[policy]), median_seconds(times).c_str(),
                  seeds - unsolved[policy], seeds);
    }
    if (with_baseline) {
      std::printf("%-8s %-13s median steps/s %.0f, median time to solved %s (measured in this run)\n",
                  setup.name.c_str(), "ppo.py", median(baseline_rates), median_seconds(baseline_solved).c_str());
    }
    if (!baseline_rates.empty()) {
      // Against ppo.py's cleanrl runs; the fast configuration's only comparable figure is time to solved.
      for (const std::string& policy : policies) {
        std::string per_seed;
        if (setup.name == "cleanrl") {
          for (size_t i = 0; i < baseline_rates.size(); ++i) {
            char pair[48];
            std::snprintf(pair, sizeof pair, "%s%.1fx", i ? " " : "", rates[policy][i] / baseline_rates[i]);
            per_seed += pair;
          }
        }
        const double baseline_time = median(baseline_solved), concord_time = median(solved_times[policy]);
        std::printf(
            "%-8s %-13s vs ppo.py: steps/s %s, time to solved %s\n", setup.name.c_str(), policy.c_str(),
            setup.name == "cleanrl"
                ? (ratio_text(median(rates[policy]), median(baseline_rates)) + " (per seed " + per_seed + ")").c_str()
                : "- (not comparable: other settings)",
            !never_solved(baseline_time) && !never_solved(concord_time)
                ? (ratio_text(baseline_time, concord_time) + " (ppo.py's over Concord's)").c_str()
                : "- (not reached by both)");
      }
    }
  }
  std::printf(
      "\npeak resident memory of this process: %.1f MiB (peak MiB above: the peak so far, which only "
      "grows; ppo.py's rows: that process's own peak)\n",
      peak_rss_mib());
  if (cleanrl_script.empty()) {
    std::printf(
        "baseline (quoted, not measured here; --cleanrl PATH measures it): CleanRL ppo.py, same defaults, this "
        "machine: ~6,900 steps/s, ~33 s to first reach a 20-episode mean of 475\n");
  }
  std::printf(
      "targets (issue 52): cleanrl steps/s >= 12x ppo.py's with single, >= 16x with async_learner, ppo.py measured "
      "in the same run; fast: median time to solved < 0.7 s over 5 seeds under some policy, < 1 s with single\n");
  return 0;
}
