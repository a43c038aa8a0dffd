// concord train: trains an algorithm on an environment under the distribution policy the config
// names (train.policy), with live progress, metrics, periodic atomic checkpoints and --resume.
#include <atomic>
#include <csignal>
#include <cstdio>
#include <memory>
#include <optional>

#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include "concord/cli/commands.h"
#include "concord/cli/run_config.h"
#include "concord/cli/run_context.h"
#include "concord/cli/training_checkpoint.h"
#include "concord/cli/training_run.h"
#include "concord/core/checkpoint.h"
#include "concord/core/progress_bar.h"

namespace concord::cli {
namespace {

struct TrainFlags {
  RunFlags run;
  std::string algo;
  std::string policy;
  int64_t total_timesteps = 0;
  std::string resume;
};

std::atomic<bool> stop_requested{false};

void request_stop(int) { stop_requested = true; }

core::Config training_config(const TrainFlags& flags) {
  if (flags.resume.empty()) {
    core::Config config = resolve_config(flags.run);
    if (!flags.algo.empty()) config.set("train.algo", flags.algo, "--algo");
    if (!flags.policy.empty()) config.set("train.policy", flags.policy, "--policy");
    if (flags.total_timesteps > 0) config.set("train.total_timesteps", flags.total_timesteps, "--total-timesteps");
    return config;
  }
  // A resumed run keeps its own config; only the length of training may change.
  if (!flags.run.config_files.empty() || !flags.run.overrides.empty() || !flags.algo.empty() || !flags.policy.empty() ||
      !flags.run.env_id.empty()) {
    throw core::ConfigError("--resume continues a run with its own config.toml; only --total-timesteps may change");
  }
  core::Config config(concord_schema());
  config.merge_file((std::filesystem::path(flags.resume) / "config.toml").string());
  if (flags.total_timesteps > 0) config.set("train.total_timesteps", flags.total_timesteps, "--total-timesteps");
  if (!flags.run.progress.empty()) config.set("run.progress", flags.run.progress, "--progress");
  return config;
}

// Ranks other than 0 of a multi-process run train in lockstep with rank 0 but write nothing: rank 0
// owns the run directory, metrics, progress and checkpoints.
void train_secondary_rank(TrainingRun& training, policies::TrainingState& state) {
  spdlog::info("rank {} of {}: training {} on {}", training.rank(), training.world_size(), training.algo(),
               training.env_spec().id);
  stop_requested = false;
  std::signal(SIGINT, request_stop);
  std::signal(SIGTERM, request_stop);
  policies::TrainingCallbacks callbacks;
  callbacks.should_stop = [] { return stop_requested.load(); };
  training.train(state, callbacks);
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  spdlog::info("rank {} done at step {}", training.rank(), state.global_step);
}

void run_train(const TrainFlags& flags) {
  if (!flags.resume.empty() && !std::filesystem::is_directory(flags.resume)) {
    throw std::invalid_argument("--resume: run directory '" + flags.resume + "' does not exist");
  }
  core::Config config = training_config(flags);
  // Everything that can reject the config (or the checkpoint) is built before the run
  // directory exists.
  policies::TrainingState state;
  std::optional<core::Checkpoint> checkpoint;
  if (!flags.resume.empty()) {
    checkpoint = core::load_checkpoint(checkpoint_path(flags.resume));
    state.global_step = checkpoint->metadata.at("global_step").get<int64_t>();
    state.updates = checkpoint->metadata.at("updates").get<int64_t>();
  }
  TrainingRun training(config, checkpoint ? &*checkpoint : nullptr);
  if (training.rank() != 0) {
    train_secondary_rank(training, state);
    return;
  }
  algos::Learner& learner = training.learner();
  const std::string& algo = training.algo();
  const std::string& env_id = training.env_spec().id;

  RunContext run = start_run(std::move(config), "train", flags.resume);
  if (!flags.resume.empty()) spdlog::info("resumed at step {} (update {})", state.global_step, state.updates);
  // env.num_envs is the run's total, whatever the number of ranks sharing it.
  spdlog::info("training {} on {} for {} steps ({} envs{}, policy {}, device {})", algo, env_id, training.total_steps(),
               training.env_config().num_envs,
               training.world_size() > 1 ? " in all, " + std::to_string(training.world_size()) + " ranks" : "",
               training.policy_name(), training.device().str());

  auto progress = run.make_progress_bar(training.total_steps(), env_id + " " + algo);
  stop_requested = false;
  std::signal(SIGINT, request_stop);
  std::signal(SIGTERM, request_stop);

  policies::TrainingCallbacks callbacks;
  callbacks.on_update = [&](const policies::TrainingState& now, const algos::Metrics& metrics,
                            const core::EpisodeStats& episodes) {
    if (progress) progress->update(now.global_step, episodes.recent_mean_return());
    run.metrics->log(now.global_step, metrics);
  };
  callbacks.on_checkpoint = [&](const policies::TrainingState& now) {
    save_training_checkpoint(run.run_dir, learner, now, run.config, training.bonus());
    spdlog::debug("checkpoint at step {}", now.global_step);
  };
  callbacks.should_stop = [] { return stop_requested.load(); };

  core::Stopwatch clock;
  training.train(state, callbacks);
  save_training_checkpoint(run.run_dir, learner, state, run.config, training.bonus());
  if (progress) progress->finish();
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  if (stop_requested) spdlog::warn("stopped by signal at step {}; checkpoint saved", state.global_step);

  std::printf("\n%-16s %s on %s\n", "trained", algo.c_str(), run.config.get_string("env.id").c_str());
  std::printf("%-16s %s (%lld updates)\n", "steps", core::format_count(state.global_step).c_str(),
              static_cast<long long>(state.updates));
  std::printf("%-16s %.1f s\n", "wall time", clock.elapsed_seconds());
  std::printf("%-16s %s\n", "checkpoint", checkpoint_path(run.run_dir).string().c_str());
  std::printf("%-16s concord eval %s\n", "evaluate with", run.run_dir.string().c_str());
}

}  // namespace

void add_train_command(CLI::App& app) {
  CLI::App* command = app.add_subcommand("train", "Train an agent (PPO or A2C) with live progress and checkpoints");
  auto flags = std::make_shared<TrainFlags>();
  add_run_flags(*command, flags->run);
  command->add_option("--algo", flags->algo, "Algorithm (train.algo): ppo or a2c");
  command->add_option("--policy", flags->policy,
                      "Distribution policy (train.policy): single, sync_vector, hogwild, central_inference, "
                      "multi_learner, actor_processes");
  command
      ->add_option("--total-timesteps", flags->total_timesteps,
                   "Environment steps to train for (train.total_timesteps)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 50));
  command->add_option("--resume", flags->resume, "Continue the run in this directory from its last checkpoint");
  command->callback([flags] { run_train(*flags); });
}

}  // namespace concord::cli
