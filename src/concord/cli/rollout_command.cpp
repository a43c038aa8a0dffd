// concord rollout: steps a VectorEnv with uniformly random actions and reports throughput and
// episode statistics. It exercises the whole environment engine and the run services (run
// directory, config, metrics, progress) without any learning.
#include <cstdio>
#include <map>
#include <memory>
#include <vector>

#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include "concord/cli/commands.h"
#include "concord/cli/run_config.h"
#include "concord/cli/run_context.h"
#include "concord/cli/unstable_physics.h"
#include "concord/core/episode_stats.h"
#include "concord/core/progress_bar.h"
#include "concord/core/rng.h"
#include "concord/core/timer.h"
#include "concord/envs/random_actions.h"
#include "concord/envs/registry.h"
#include "concord/envs/vector_env.h"

namespace concord::cli {
namespace {

struct RolloutFlags {
  RunFlags run;
  int64_t steps = 0;
};

// Random actions for `count` envs into whichever buffer matches the action space.
class RandomActionSource {
 public:
  RandomActionSource(const envs::Space& space, int64_t max_count, uint64_t seed) : space_(space), rng_(seed) {
    if (space_.is_discrete()) {
      indices_.resize(max_count);
    } else {
      values_.resize(max_count * space_.flat_size());
    }
  }
  void sample(int64_t count) {
    if (space_.is_discrete()) {
      envs::sample_actions(space_, rng_, count, indices_.data());
    } else {
      envs::sample_actions(space_, rng_, count, values_.data());
    }
  }
  void step(envs::VectorEnv& env) {
    if (space_.is_discrete()) {
      env.step(indices_.data());
    } else {
      env.step(values_.data());
    }
  }
  void send(envs::VectorEnv& env, const int32_t* env_ids, int64_t count) {
    if (space_.is_discrete()) {
      env.send(indices_.data(), env_ids, count);
    } else {
      env.send(values_.data(), env_ids, count);
    }
  }

 private:
  const envs::Space& space_;
  core::Rng rng_;
  std::vector<int64_t> indices_;
  std::vector<float> values_;
};

void record_episodes(const envs::Batch& batch, core::EpisodeStats& stats) {
  for (int64_t row = 0; row < batch.size; ++row) {
    if (batch.has_final[row]) stats.add(batch.episode_returns[row], batch.episode_lengths[row]);
  }
}

void run_rollout(const RolloutFlags& flags) {
  core::Config config = resolve_config(flags.run);
  if (flags.steps > 0) config.set("rollout.steps", flags.steps, "--steps");
  const int64_t total_steps = config.get_int("rollout.steps");
  if (total_steps < 1) throw core::ConfigError("rollout.steps must be at least 1, got " + std::to_string(total_steps));

  // The engine validates its config before any run directory is created.
  const envs::VectorEnvConfig env_config = vector_env_config(config);
  check_memory_estimate(config, envs::make_env(env_config.env_id, env_config.options)->spec(), 1, "");
  envs::VectorEnv env(env_config);
  RunContext run = start_run(std::move(config), "rollout");
  const envs::Space& action_space = env.spec().action_space;
  RandomActionSource actions(action_space, env.num_envs(),
                             core::derive_seed(static_cast<uint64_t>(run.config.get_int("run.seed")), 1u << 20));
  core::EpisodeStats stats;
  const std::string label = env.spec().id + " random";
  auto progress = run.make_progress_bar(total_steps, label);
  const double log_interval = run.config.get_double("log.interval_seconds");
  spdlog::info("rollout of {} steps on {} x {} ({} threads, {})", total_steps, env.num_envs(), env.spec().id,
               env.num_threads(), env.is_async() ? "async batch " + std::to_string(env.batch_size()) : "sync");

  const UnstablePhysics unstable(env.spec().id);
  core::Stopwatch clock;
  double last_log_time = 0.0;
  int64_t last_log_steps = 0;
  int64_t steps = 0;
  auto report = [&](bool force) {
    if (progress) progress->update(steps, stats.recent_mean_return());
    const double now = clock.elapsed_seconds();
    if (!force && now - last_log_time < log_interval) return;
    std::map<std::string, double> values{
        {"rollout/steps_per_second", static_cast<double>(steps - last_log_steps) / std::max(now - last_log_time, 1e-9)},
        {"rollout/episodes", static_cast<double>(stats.count())}};
    if (auto recent = stats.recent_mean_return()) values["rollout/episode_return"] = *recent;
    if (auto recent = stats.recent_mean_length()) values["rollout/episode_length"] = *recent;
    unstable.add_to(values);
    run.metrics->log(steps, values);
    last_log_time = now;
    last_log_steps = steps;
  };

  if (!env.is_async()) {
    env.reset();
    while (steps < total_steps) {
      actions.sample(env.num_envs());
      actions.step(env);
      steps += env.num_envs();
      record_episodes(env.last_batch(), stats);
      report(false);
    }
  } else {
    // Steps are counted when sent: every sent action is stepped, whether or not its result
    // has been received when the loop ends.
    env.async_reset();
    envs::Batch batch = env.recv();
    while (steps < total_steps) {
      record_episodes(batch, stats);
      actions.sample(batch.size);
      actions.send(env, batch.env_ids, batch.size);
      steps += batch.size;
      batch = env.recv();
      report(false);
    }
  }
  const double seconds = clock.elapsed_seconds();
  report(true);
  if (progress) progress->finish();
  unstable.warn_if_any(steps);

  std::printf("\n%-14s %s\n", "environment", env.spec().id.c_str());
  std::printf("%-14s %lld envs, %d threads, %s\n", "engine", static_cast<long long>(env.num_envs()), env.num_threads(),
              env.is_async() ? ("async batch " + std::to_string(env.batch_size())).c_str() : "sync");
  std::printf("%-14s %s\n", "steps", core::format_count(steps).c_str());
  std::printf("%-14s %.3f s\n", "wall time", seconds);
  std::printf("%-14s %s\n", "steps/s", core::format_rate(static_cast<double>(steps) / seconds).c_str());
  std::printf("%-14s %s\n", "episodes", core::format_count(stats.count()).c_str());
  if (stats.count() > 0) {
    std::printf("%-14s %.2f +- %.2f (min %.2f, max %.2f)\n", "return", stats.mean_return(), stats.std_return(),
                stats.min_return(), stats.max_return());
    std::printf("%-14s %.1f\n", "length", stats.mean_length());
  }
  std::printf("%-14s %s\n", "run dir", run.run_dir.string().c_str());
}

}  // namespace

void add_rollout_command(CLI::App& app) {
  CLI::App* command =
      app.add_subcommand("rollout", "Step environments with random actions; print steps/s and episode statistics");
  auto flags = std::make_shared<RolloutFlags>();
  add_run_flags(*command, flags->run);
  command->add_option("--steps", flags->steps, "Environment steps in total (rollout.steps)")
      ->transform(count_between(1, int64_t{1} << 50));
  command->callback([flags] { run_rollout(*flags); });
}

}  // namespace concord::cli
