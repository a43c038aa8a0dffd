#include "concord/cli/fit_checkpoint.h"

#include <filesystem>

#include "concord/cli/training_checkpoint.h"
#include "concord/core/checkpoint_fields.h"
#include "concord/supervised/replica_state.h"

namespace concord::cli {

FitResume find_fit_resume(const std::string& resume_flag, const core::Config& config,
                          const std::set<std::string>& may_change, int ranks, const std::string& counter) {
  FitResume resume;
  if (resume_flag.empty()) resume.restart = restarted_run();
  resume.run_dir = resume.restart.checkpointed ? resume.restart.run_dir : resume_flag;
  if (resume.run_dir.empty()) return resume;
  const std::filesystem::path file = checkpoint_path(resume.run_dir);
  resume.state = core::load_checkpoint(file);
  check_resumable(checkpoint_config(*resume.state, file), config, file, may_change);
  try {
    supervised::replica_state(*resume.state, 0, ranks);
    resume.step = core::metadata_int(*resume.state, counter);
  } catch (const core::CheckpointError& error) {
    throw error.with_path(file);
  }
  return resume;
}

void save_fit_checkpoint(const RunContext& run, core::Checkpoint state, const nlohmann::json& labels) {
  state.metadata["command"] = "fit";
  for (const auto& [key, value] : labels.items()) state.metadata[key] = value;
  state.metadata["config"] = run.config.to_toml();
  core::save_checkpoint(checkpoint_path(run.run_dir), state);
}

}  // namespace concord::cli
