#include "concord/cli/training_checkpoint.h"

#include "concord/core/checkpoint.h"

namespace concord::cli {

std::filesystem::path checkpoint_path(const std::filesystem::path& run_dir) { return run_dir / "checkpoint.ckpt"; }

void save_training_checkpoint(const std::filesystem::path& run_dir, const algos::Learner& learner,
                              const policies::TrainingState& state, const core::Config& config,
                              const explore::Bonus* bonus) {
  core::Checkpoint checkpoint;
  learner.save(checkpoint);
  if (bonus != nullptr) bonus->save(checkpoint);
  checkpoint.metadata["global_step"] = state.global_step;
  checkpoint.metadata["updates"] = state.updates;
  checkpoint.metadata["env_id"] = config.get_string("env.id");
  checkpoint.metadata["config"] = config.to_toml();
  core::save_checkpoint(checkpoint_path(run_dir), checkpoint);
}

std::filesystem::path resolve_checkpoint(const std::filesystem::path& run_dir_or_file) {
  if (std::filesystem::is_directory(run_dir_or_file)) return checkpoint_path(run_dir_or_file);
  return run_dir_or_file;
}

}  // namespace concord::cli
