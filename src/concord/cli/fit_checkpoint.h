#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "concord/cli/run_context.h"
#include "concord/core/checkpoint.h"
#include "concord/core/config.h"

namespace concord::cli {

// Where a `concord fit` (classifier or GAN) continues from: `--resume RUN_DIR`, or the run
// directory of a group `concord launch --max-restarts` restarted (restart.run_dir, whose config is
// the command's). Every rank reads the checkpoint and later takes its own part of it.
struct FitResume {
  RestartedRun restart;                   // the restart's run directory ("" outside one)
  std::string run_dir;                    // the directory resumed from ("" for a fresh start)
  std::optional<core::Checkpoint> state;  // its checkpoint, with every rank's part
  int64_t step = 0;                       // metadata[counter] of the checkpoint

  // The run directory this run writes to: the resumed one, the restart's, or "" for a new one.
  std::string reused_run_dir() const { return run_dir.empty() ? restart.run_dir : run_dir; }
};

// Finds and checks the checkpoint to resume from: its config must be `config` but for
// `may_change`, it must hold the state of `ranks` ranks, and metadata[counter] (the step or round
// count) must be there. Throws core::CheckpointError naming the file.
FitResume find_fit_resume(const std::string& resume_flag, const core::Config& config,
                          const std::set<std::string>& may_change, int ranks, const std::string& counter);

// Saves every rank's `state` to the run directory's checkpoint, with metadata "command" = "fit",
// `labels` (counters, model, ...) and the run's config, atomically.
void save_fit_checkpoint(const RunContext& run, core::Checkpoint state, const nlohmann::json& labels);

}  // namespace concord::cli
