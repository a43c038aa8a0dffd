#pragma once

#include <filesystem>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "concord/algos/learner.h"
#include "concord/core/checkpoint.h"
#include "concord/core/config.h"
#include "concord/explore/bonus.h"
#include "concord/policies/single.h"

namespace concord::cli {

// A run directory keeps its latest checkpoint here; `--resume RUN_DIR` and `concord eval RUN_DIR`
// read it.
std::filesystem::path checkpoint_path(const std::filesystem::path& run_dir);

// Saves the learner, the exploration bonus's state (hash and counts) when there is one, the
// loop's counters and the resolved config (so that eval and resume can rebuild everything from
// the file alone), atomically, to checkpoint_path(run_dir). With train.keep_checkpoints = K > 1
// it is also kept as kept_checkpoint_path(run_dir, step), and only the K newest of those stay.
void save_training_checkpoint(const std::filesystem::path& run_dir, const algos::Learner& learner,
                              const policies::TrainingState& state, const core::Config& config,
                              const explore::Bonus* bonus = nullptr);

// Tells core::run_checkpoint_note that checkpoint_path(run_dir) holds `state`: "the checkpoint
// PATH holds step N (update U)". save_training_checkpoint calls it after each save.
void note_run_checkpoint(const std::filesystem::path& run_dir, const policies::TrainingState& state);

// Where a checkpoint taken at `global_step` is kept (checkpoint-STEP.ckpt), for `concord eval FILE`.
std::filesystem::path kept_checkpoint_path(const std::filesystem::path& run_dir, int64_t global_step);

// The kept checkpoints of a run directory, oldest first, with their steps.
std::vector<std::pair<int64_t, std::filesystem::path>> kept_checkpoints(const std::filesystem::path& run_dir);

// Keeps `latest` (just written for `global_step`) as kept_checkpoint_path and removes all but the
// `keep` newest kept checkpoints. Throws std::filesystem::filesystem_error when it cannot.
void keep_checkpoint(const std::filesystem::path& run_dir, const std::filesystem::path& latest, int64_t global_step,
                     int64_t keep);

// The training loop's counters (global_step, updates) of a checkpoint `concord train` wrote, checked
// against each other and against `config`, the config saved in it: 0 <= updates <= global_step,
// and no more steps than `updates` + 1 rounds of every env's rollout can hold. Throws
// CheckpointError naming `file` for counters no run could have reached (a hand-edited step).
policies::TrainingState checked_training_state(const core::Checkpoint& checkpoint, const core::Config& config,
                                               const std::filesystem::path& file);

// The config a checkpoint `concord train` wrote was trained with; throws CheckpointError naming
// `file` if it holds none, and core::ConfigError if it does not parse.
core::Config checkpoint_config(const core::Checkpoint& checkpoint, const std::filesystem::path& file);

// The config a run resumed with `--resume RUN_DIR` trains with: the run's own config.toml. Throws
// std::invalid_argument when the directory does not exist, and core::ConfigError when the file is
// missing or does not parse.
core::Config resumed_run_config(const std::string& run_dir);

// The checkpoint must be the one the run directory's config.toml trained: a different seed, env or
// any other key but `may_change` (the length of training, the progress mode) means a file from
// elsewhere or edited. Throws CheckpointError naming `file` and the first key that differs.
void check_resumable(const core::Config& trained_with, const core::Config& config, const std::filesystem::path& file,
                     const std::set<std::string>& may_change);

// A checkpoint file, or a run directory holding one, resolved to the file.
std::filesystem::path resolve_checkpoint(const std::filesystem::path& run_dir_or_file);

}  // namespace concord::cli
