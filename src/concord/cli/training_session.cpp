#include "concord/cli/training_session.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include "concord/algos/learner_family.h"
#include "concord/algos/off_policy_learner.h"
#include "concord/cli/config_bounds.h"
#include "concord/cli/config_presets.h"
#include "concord/cli/run_context.h"
#include "concord/cli/signal_stop.h"
#include "concord/cli/training_checkpoint.h"
#include "concord/cli/training_run.h"
#include "concord/cli/training_video.h"
#include "concord/cli/unstable_physics.h"
#include "concord/comm/launch_environment.h"
#include "concord/core/checkpoint.h"
#include "concord/core/progress_bar.h"
#include "concord/core/stop_request.h"
#include "concord/core/timer.h"

namespace concord::cli {

core::Config training_config(const TrainFlags& flags) {
  if (flags.resume.empty()) {
    core::Config config = resolve_config(flags.run);
    if (!flags.algo.empty()) config.set("train.algo", flags.algo, "--algo");
    if (!flags.policy.empty()) config.set("train.policy", flags.policy, "--policy");
    if (flags.total_timesteps > 0) config.set("train.total_timesteps", flags.total_timesteps, "--total-timesteps");
    if (flags.capture_video) config.set("train.capture_video", true, "--capture-video");
    return config;
  }
  // A resumed run keeps its own config; only the length of training may change.
  if (!flags.run.config_files.empty() || !flags.run.overrides.empty() || !flags.algo.empty() || !flags.policy.empty() ||
      !flags.run.env_id.empty() || flags.run.seed >= 0 || flags.run.num_envs > 0 || flags.run.num_threads > 0 ||
      !flags.run.run_root.empty()) {
    throw core::ConfigError(
        "--resume continues a run with its own config.toml; only --total-timesteps, --progress and --capture-video "
        "may change");
  }
  core::Config config = resumed_run_config(flags.resume);
  if (flags.total_timesteps > 0) config.set("train.total_timesteps", flags.total_timesteps, "--total-timesteps");
  if (!flags.run.progress.empty()) config.set("run.progress", flags.run.progress, "--progress");
  if (flags.capture_video) config.set("train.capture_video", true, "--capture-video");
  check_config_bounds(config, /*machine_limits=*/false);
  return config;
}

namespace {

std::function<bool()> stop_condition(const SignalStop& signals, const TrainingHooks& hooks) {
  return [&signals, &hooks] { return signals.requested() || (hooks.should_stop && hooks.should_stop()); };
}

// Ranks other than 0 of a multi-process run train in lockstep with rank 0 but write nothing: rank 0
// owns the run directory, metrics, progress and checkpoints.
TrainingOutcome train_secondary_rank(TrainingRun& training, policies::TrainingState& state,
                                     const TrainingHooks& hooks) {
  spdlog::info("rank {} of {}: training {} on {}", training.rank(), training.world_size(), training.algo(),
               training.env_spec().id);
  TrainingOutcome outcome{{}, training.algo(), training.env_spec().id, state, 0.0, 0, {}};
  const int64_t start_step = state.global_step;
  core::Stopwatch clock;
  {
    // These ranks stop when rank 0 does, at an update, whether or not they have made one.
    SignalStop::first_update_done();
    SignalStop signals;
    policies::TrainingCallbacks callbacks;
    callbacks.should_stop = stop_condition(signals, hooks);
    training.train(state, callbacks);
    outcome.stop_signal = signals.signal();
  }
  // An actor rank keeps no step count of its own (rank 0 counts the steps it sends): its state
  // still holds the step a resume started at.
  if (state.global_step > start_step) {
    spdlog::info("rank {} done at step {}", training.rank(), state.global_step);
  } else {
    spdlog::info("rank {} done", training.rank());
  }
  outcome.state = state;
  outcome.wall_seconds = clock.elapsed_seconds();
  return outcome;
}

// A run that fails for a reason outside the learner's numbers (an actor or env that died, a peer
// that timed out) keeps its progress since the last checkpoint: the learner as of its last
// completed update, with that update's counters (every policy has stopped and joined its threads
// before the error reaches here). That is only true if the parameters are still those of that
// update: an error inside an update (a collective of multi_learner's) may come after some of its
// gradient steps, and then the last checkpoint is kept. Never throws: the run's own error is what
// the user must see.
void save_checkpoint_after_error(const std::filesystem::path& run_dir, algos::Learner& learner,
                                 const policies::TrainingState& last_update, const torch::Tensor& parameters_then,
                                 const core::Config& config, const explore::Bonus* bonus) {
  try {
    if (!torch::equal(learner.flat_parameters().values(), parameters_then)) {
      spdlog::warn("the error came during an update (the parameters moved since update {}): {}", last_update.updates,
                   std::filesystem::exists(checkpoint_path(run_dir)) ? "the last checkpoint is kept"
                                                                     : "no checkpoint yet, and none is saved");
      return;
    }
    if (!torch::isfinite(parameters_then).all().item<bool>()) {
      spdlog::error("not saving a checkpoint after the error: the parameters are not finite");
      return;
    }
    save_training_checkpoint(run_dir, learner, last_update, config, bonus);
    spdlog::warn("checkpoint saved at step {} (update {}) after the error", last_update.global_step,
                 last_update.updates);
  } catch (const std::exception& error) {
    spdlog::error("could not save a checkpoint after the error: {}", error.what());
  }
}

// A policy's "training stopped, the last checkpoint is intact" for a run that wrote none yet.
std::string without_checkpoint(std::string message) {
  const std::string claim = "the last checkpoint is intact";
  const std::string truth = "no checkpoint yet (the run wrote none before it)";
  const size_t at = message.find(claim);
  if (at == std::string::npos) return message + "; " + truth;
  return message.replace(at, claim.size(), truth);
}

// core::run_checkpoint_note for the length of a run: the checkpoint it resumed from, or none yet
// (save_training_checkpoint updates it); cleared when the run ends.
struct RunCheckpointNote {
  RunCheckpointNote(bool resumed, const std::filesystem::path& run_dir, const policies::TrainingState& state) {
    if (resumed) {
      note_run_checkpoint(run_dir, state);
    } else {
      core::set_run_checkpoint_note("no checkpoint yet");
    }
  }
  ~RunCheckpointNote() { core::set_run_checkpoint_note(""); }
  RunCheckpointNote(const RunCheckpointNote&) = delete;
  RunCheckpointNote& operator=(const RunCheckpointNote&) = delete;
};

// core::set_last_resort_checkpoint for the length of a run's train() call; gone (a save under way
// ended) before the run saves for itself.
struct LastResortCheckpoint {
  explicit LastResortCheckpoint(std::function<void()> save) { core::set_last_resort_checkpoint(std::move(save)); }
  ~LastResortCheckpoint() { core::set_last_resort_checkpoint(nullptr); }
  LastResortCheckpoint(const LastResortCheckpoint&) = delete;
  LastResortCheckpoint& operator=(const LastResortCheckpoint&) = delete;
};

// A run that will do nothing, or nearly nothing, says so before it starts.
void warn_if_little_to_do(TrainingRun& training, const policies::TrainingState& state) {
  if (state.global_step >= training.total_steps()) {
    spdlog::warn(
        "nothing to train: the run is at step {} and train.total_timesteps is {}; resume with --total-timesteps "
        "above {} to train on",
        state.global_step, training.total_steps(), state.global_step);
    return;
  }
  const auto* off_policy = algos::off_policy(training.learner());
  if (off_policy != nullptr && training.total_steps() <= off_policy->learning_starts()) {
    spdlog::warn(
        "train.total_timesteps={} is not above the {} steps of random acting before the first update "
        "(algo.{}.learning_starts): the learner will make no update; train for more steps or lower it",
        training.total_steps(), off_policy->learning_starts(), training.algo());
  }
}

// An off-policy learner that made far fewer updates than its train_frequency asks for was starved:
// actors on other threads or processes stepped the envs faster than it learned.
void warn_if_learner_starved(TrainingRun& training, const core::Config& config, const policies::TrainingState& start,
                             const policies::TrainingState& end) {
  const auto* off_policy = algos::off_policy(training.learner());
  if (off_policy == nullptr) return;
  const int64_t from = std::max(start.global_step, off_policy->learning_starts());
  const int64_t due = std::max<int64_t>(0, (end.global_step - from) / off_policy->train_frequency());
  const std::string bound = "policy." + training.policy_name() + ".max_env_steps_per_update";
  const std::string warning =
      starved_learner_warning(end.updates - start.updates, due, end.global_step - start.global_step,
                              off_policy->train_frequency(), config.schema().contains(bound) ? bound : "");
  if (!warning.empty()) spdlog::warn("{}", warning);
}

// The shipped presets (configs/) that train `env_id`.
std::vector<std::string> presets_for(const std::string& env_id) {
  std::vector<std::string> found;
  for (const std::string& name : preset_names()) {
    std::string error;
    const std::string file = resolve_config_file(name, error);
    if (file.empty()) continue;
    try {
      core::Config preset(concord_schema());
      preset.merge_file(file);
      if (preset.get_string("env.id") == env_id) found.push_back(name);
    } catch (const std::exception&) {
      continue;  // a preset that does not read is no suggestion
    }
  }
  return found;
}

// The facts the verdict judges: what the run did, and what a user changes to get updates sooner.
VerdictFacts verdict_facts(TrainingRun& training, const core::Config& config, const policies::TrainingState& end,
                           ReturnTrack returns, const std::vector<std::string>& config_files) {
  VerdictFacts facts;
  facts.steps = end.global_step;
  facts.updates = end.updates;
  facts.returns = std::move(returns);
  facts.reward_threshold = training.env_spec().reward_threshold;
  const std::string prefix = "algo." + training.algo() + ".";
  if (const auto* off_policy = algos::off_policy(training.learner())) {
    facts.update_schedule = "the first comes after " + prefix +
                            "learning_starts=" + std::to_string(off_policy->learning_starts()) + " env steps";
    facts.sooner_settings = prefix + "learning_starts";
  } else if (config.schema().contains(prefix + "num_steps")) {
    const int64_t num_steps = config.get_int(prefix + "num_steps");
    const int64_t num_envs = training.env_config().num_envs;
    facts.update_schedule = "each takes " + prefix + "num_steps x env.num_envs = " + std::to_string(num_steps) + " x " +
                            std::to_string(num_envs) + " = " + core::format_count(num_steps * num_envs) + " env steps";
    facts.sooner_settings = prefix + "num_steps";
  }
  facts.presets = presets_not_given(presets_for(training.env_spec().id), config_files);
  return facts;
}

}  // namespace

std::string starved_learner_warning(int64_t made, int64_t due, int64_t steps, int64_t train_frequency,
                                    const std::string& bound) {
  if (due < 40 || made * 4 >= due) return "";
  char share[32];
  std::snprintf(share, sizeof(share), "%.0f%%", 100.0 * static_cast<double>(made) / static_cast<double>(due));
  return "the learner made " + std::to_string(made) + (made == 1 ? " update in " : " updates in ") +
         std::to_string(steps) + " env steps, " + share + " of the " + std::to_string(due) +
         " that train_frequency=" + std::to_string(train_frequency) +
         " asks for: the actors outran it, and the agent learned from fewer samples per step than configured" +
         (bound.empty() ? "" : " (" + bound + " bounds env steps per update)");
}

TrainingOutcome run_training_session(const TrainFlags& flags, const TrainingHooks& hooks) {
  if (!flags.resume.empty() && !std::filesystem::is_directory(flags.resume)) {
    throw std::invalid_argument("--resume: run directory '" + flags.resume + "' does not exist");
  }
  core::Config config = training_config(flags);
  // A restarted group runs its command again, so its config is the command's; the checkpoint's
  // own must then be the same (check_resumable), as for --resume.
  const RestartedRun restarted = flags.resume.empty() ? restarted_run() : RestartedRun{};
  const std::string resume_dir = restarted.checkpointed ? restarted.run_dir : flags.resume;
  // A second process resuming the same directory is refused before it reads anything there. Only
  // rank 0 writes the run (the others of a launched group read its checkpoint and leave it alone).
  core::RunDirLock lock;
  if (!flags.resume.empty() && comm::LaunchEnvironment::from_environment().rank == 0) {
    lock = core::RunDirLock(flags.resume);
  }
  // Everything that can reject the config (or the checkpoint) is built before the run
  // directory exists.
  policies::TrainingState state;
  std::optional<core::Checkpoint> checkpoint;
  const std::filesystem::path resume_file = resume_dir.empty() ? "" : checkpoint_path(resume_dir);
  if (!resume_dir.empty()) {
    if (!std::filesystem::exists(resume_file)) {
      // Said in full: a run that failed before its first checkpoint leaves a directory without one.
      throw core::CheckpointError(
          core::CheckpointError::Kind::kMissing, resume_file,
          "no such file: no checkpoint yet (the run ended before writing one); start a new run");
    }
    checkpoint = core::load_checkpoint(resume_file);
    const core::Config trained_with = checkpoint_config(*checkpoint, resume_file);
    state = checked_training_state(*checkpoint, trained_with, resume_file);
    check_resumable(trained_with, config, resume_file,
                    {"train.total_timesteps", "run.progress", "train.capture_video"});
  }
  std::optional<TrainingRun> restored;
  try {
    restored.emplace(config, checkpoint ? &*checkpoint : nullptr);
  } catch (const core::CheckpointError& error) {
    throw error.with_path(resume_file);
  }
  TrainingRun& training = *restored;
  if (training.rank() != 0) return train_secondary_rank(training, state, hooks);
  TrainingVideos videos(config);
  algos::Learner& learner = training.learner();
  const std::string& algo = training.algo();
  const std::string& env_id = training.env_spec().id;

  // A renamed key the user wrote is said once the run starts (a refusal before then stays one line).
  const std::vector<std::string> renamed_keys = config.notes();
  RunContext run =
      start_run(std::move(config), "train", resume_dir.empty() ? restarted.run_dir : resume_dir, "", std::move(lock));
  for (const std::string& note : renamed_keys) spdlog::warn("{}", note);
  if (!resume_dir.empty()) spdlog::info("resumed at step {} (update {})", state.global_step, state.updates);
  // What the run holds on disk, for a line written by a thread that ends the process at once.
  const RunCheckpointNote note(!resume_dir.empty(), run.run_dir, state);
  // At step 0 for a restart without a checkpoint: the failed group's rows go.
  if (!resume_dir.empty() || !restarted.run_dir.empty()) run.metrics->resume_at(state.global_step);
  // env.num_envs is the run's total, whatever the number of ranks sharing it.
  spdlog::info("training {} on {} for {} steps ({}{}, policy {}, device {})", algo, env_id, training.total_steps(),
               counted(training.env_config().num_envs, "env", "envs"),
               training.world_size() > 1 ? " in all, " + std::to_string(training.world_size()) + " ranks" : "",
               training.policy_name(), training.device().str());

  warn_if_little_to_do(training, state);
  const policies::TrainingState start_state = state;

  auto progress = run.make_progress_bar(training.total_steps(), env_id + " " + algo, state.global_step);
  TrainingOutcome outcome{run.run_dir, algo, env_id, state, 0.0, 0, {}};
  core::Stopwatch clock;
  ReturnTrack returns;
  {
    SignalStop signals;
    policies::TrainingCallbacks callbacks;
    callbacks.on_episode = [&returns](double episode_return, int64_t episode_length) {
      returns.add_episode(episode_return, episode_length);
    };
    // The last completed update, for a checkpoint after an error (save_checkpoint_after_error).
    policies::TrainingState last_update = state;
    const torch::Tensor parameters_then = learner.flat_parameters().values().detach().clone();
    // log.interval_steps: an update is recorded once global_step reaches the next multiple of the
    // interval (every update at 0); the last update is recorded at the end whatever the interval.
    const int64_t log_interval = training.log_interval_steps();
    int64_t next_record_step = 0;
    std::optional<std::pair<int64_t, algos::Metrics>> unrecorded;
    const UnstablePhysics unstable(run.config.get_string("env.id"));
    callbacks.on_update = [&](const policies::TrainingState& now, const algos::Metrics& metrics,
                              const core::EpisodeStats& episodes) {
      last_update = now;
      SignalStop::first_update_done();
      returns.sample();
      parameters_then.copy_(learner.flat_parameters().values().detach());
      if (progress) progress->update(now.global_step, episodes.recent_mean_return());
      if (now.global_step >= next_record_step) {
        if (unstable.active()) {
          algos::Metrics with_physics = metrics;
          unstable.add_to(with_physics);
          run.metrics->log(now.global_step, with_physics);
        } else {
          run.metrics->log(now.global_step, metrics);
        }
        next_record_step = log_interval > 0 ? (now.global_step / log_interval + 1) * log_interval : 0;
        unrecorded.reset();
      } else {
        unrecorded.emplace(now.global_step, metrics);
      }
      if (hooks.on_update) hooks.on_update(now, metrics, episodes);
    };
    core::Stopwatch since_checkpoint;
    callbacks.on_checkpoint = [&](const policies::TrainingState& now) {
      save_training_checkpoint(run.run_dir, learner, now, run.config, training.bonus());
      videos.film(run.run_dir, now.global_step);
      since_checkpoint.restart();
      spdlog::debug("checkpoint at step {}", now.global_step);
    };
    if (training.checkpoint_interval_seconds() > 0.0) {
      callbacks.checkpoint_requested = [&] {
        return since_checkpoint.elapsed_seconds() >= training.checkpoint_interval_seconds();
      };
    }
    callbacks.should_stop = stop_condition(signals, hooks);
    try {
      // A Python env call that cannot be interrupted ends the process from another thread: it saves
      // this checkpoint first (the learner is still, for its thread waits for that call). Unwinding
      // ends it before a handler below saves.
      const LastResortCheckpoint last_resort([&] {
        save_checkpoint_after_error(run.run_dir, learner, last_update, parameters_then, run.config, training.bonus());
      });
      training.train(state, callbacks);
    } catch (const policies::NonFiniteMetric& error) {
      // The learner's numbers went wrong: the last checkpoint is the one to keep, where there is one.
      if (std::filesystem::exists(checkpoint_path(run.run_dir))) throw;
      throw policies::NonFiniteMetric(without_checkpoint(error.what()));
    } catch (const std::exception& error) {
      save_checkpoint_after_error(run.run_dir, learner, last_update, parameters_then, run.config, training.bonus());
      throw;
    }
    if (unrecorded) {
      unstable.add_to(unrecorded->second);
      run.metrics->log(unrecorded->first, unrecorded->second);
    }
    unstable.warn_if_any(state.global_step - start_state.global_step);
    save_training_checkpoint(run.run_dir, learner, state, run.config, training.bonus());
    // A run stopped by a signal ends without filming: it was asked to end now.
    if (signals.signal() == 0) videos.film(run.run_dir, state.global_step);
    if (progress) progress->finish();
    outcome.stop_signal = signals.signal();
  }
  if (outcome.stop_signal != 0) spdlog::warn("stopped by signal at step {}; checkpoint saved", state.global_step);
  if (outcome.stop_signal == 0) warn_if_learner_starved(training, run.config, start_state, state);
  outcome.state = state;
  outcome.wall_seconds = clock.elapsed_seconds();
  returns.finish();
  outcome.verdict =
      training_verdict(verdict_facts(training, run.config, state, std::move(returns), flags.run.config_files));
  return outcome;
}

}  // namespace concord::cli
