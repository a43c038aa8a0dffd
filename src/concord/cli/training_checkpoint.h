#pragma once

#include <filesystem>
#include <string>

#include "concord/algos/learner.h"
#include "concord/core/config.h"
#include "concord/explore/bonus.h"
#include "concord/policies/single.h"

namespace concord::cli {

// A run directory keeps its latest checkpoint here; `--resume RUN_DIR` and `concord eval RUN_DIR`
// read it.
std::filesystem::path checkpoint_path(const std::filesystem::path& run_dir);

// Saves the learner, the exploration bonus's state (hash and counts) when there is one, the
// loop's counters and the resolved config (so that eval and resume can rebuild everything from
// the file alone), atomically.
void save_training_checkpoint(const std::filesystem::path& run_dir, const algos::Learner& learner,
                              const policies::TrainingState& state, const core::Config& config,
                              const explore::Bonus* bonus = nullptr);

// A checkpoint file, or a run directory holding one, resolved to the file.
std::filesystem::path resolve_checkpoint(const std::filesystem::path& run_dir_or_file);

}  // namespace concord::cli
