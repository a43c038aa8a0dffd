#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include "concord/algos/learner.h"
#include "concord/cli/run_config.h"
#include "concord/cli/training_verdict.h"
#include "concord/core/config.h"
#include "concord/core/episode_stats.h"
#include "concord/policies/policy.h"

namespace concord::cli {

// What `concord train` reads from its command line. The Python module's concord.train() fills the
// same struct, so both take the same keys, defaults and shorthands and fail with the same errors.
struct TrainFlags {
  RunFlags run;
  std::string algo;
  std::string policy;
  int64_t total_timesteps = 0;
  bool capture_video = false;
  std::string resume;
};

// The config a run trains with: defaults <- config files <- overrides <- shorthand flags, or, with
// `resume`, the run's own config.toml, of which only the length of training and the progress mode
// may change. Throws core::ConfigError naming the key.
core::Config training_config(const TrainFlags& flags);

// What a caller adds to the session's own handling of updates and stops.
struct TrainingHooks {
  // After every update, once the metrics and progress are recorded; no learner update is running.
  std::function<void(const policies::TrainingState&, const algos::Metrics&, const core::EpisodeStats&)> on_update;
  // Polled beside the signals; returning true stops the run cleanly, as SIGINT does.
  std::function<bool()> should_stop;
};

struct TrainingOutcome {
  std::filesystem::path run_dir;  // empty on ranks other than 0, which write nothing
  std::string algo;
  std::string env_id;
  policies::TrainingState state;
  double wall_seconds = 0.0;
  int stop_signal = 0;  // SIGINT or SIGTERM when one stopped the run, else 0
  // The return, the env's threshold and what to change (training_verdict); empty on other ranks.
  std::vector<SummaryLine> verdict;
};

// `concord train` from resolved flags to a finished run: builds the TrainingRun (which rejects a
// bad config before anything is written), creates or reuses the run directory, logs metrics,
// draws progress, checkpoints every train.checkpoint_interval_steps and once at the end, also when
// a signal (SignalStop) or hooks.should_stop ended the run early. Ranks other than 0 of a
// multi-process run train in lockstep and write nothing. Throws what TrainingRun throws, and
// whatever a hook throws (after the policy has stopped, without a final checkpoint).
TrainingOutcome run_training_session(const TrainFlags& flags, const TrainingHooks& hooks = {});

// The warning for an off-policy learner that made `made` updates in `steps` env steps where its
// train_frequency asked for `due` (counted from learning_starts): "" unless it made fewer than a
// quarter of them (and at least 40 were due). `bound` names a config key that bounds env steps
// per update, or is "".
std::string starved_learner_warning(int64_t made, int64_t due, int64_t steps, int64_t train_frequency,
                                    const std::string& bound);

}  // namespace concord::cli
