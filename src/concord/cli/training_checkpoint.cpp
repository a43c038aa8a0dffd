#include "concord/cli/training_checkpoint.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "concord/algos/algorithm_registry.h"
#include "concord/cli/run_config.h"
#include "concord/core/atomic_file.h"
#include "concord/core/checkpoint.h"
#include "concord/core/stop_request.h"
#include "concord/policies/policy_registry.h"

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
  const std::filesystem::path latest = checkpoint_path(run_dir);
  core::save_checkpoint(latest, checkpoint);
  note_run_checkpoint(run_dir, state);
  const int64_t keep =
      config.schema().contains("train.keep_checkpoints") ? config.get_int("train.keep_checkpoints") : 1;
  if (keep > 1) keep_checkpoint(run_dir, latest, state.global_step, keep);
}

void note_run_checkpoint(const std::filesystem::path& run_dir, const policies::TrainingState& state) {
  core::set_run_checkpoint_note("the checkpoint " + checkpoint_path(run_dir).string() + " holds step " +
                                std::to_string(state.global_step) + " (update " + std::to_string(state.updates) + ")");
}

std::filesystem::path kept_checkpoint_path(const std::filesystem::path& run_dir, int64_t global_step) {
  return run_dir / ("checkpoint-" + std::to_string(global_step) + ".ckpt");
}

std::vector<std::pair<int64_t, std::filesystem::path>> kept_checkpoints(const std::filesystem::path& run_dir) {
  std::vector<std::pair<int64_t, std::filesystem::path>> kept;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(run_dir, error)) {
    const std::string name = entry.path().filename().string();
    const std::string prefix = "checkpoint-", suffix = ".ckpt";
    if (name.size() <= prefix.size() + suffix.size() || name.compare(0, prefix.size(), prefix) != 0 ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
      continue;
    }
    const std::string digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
    if (digits.size() > 18 || !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      continue;
    }
    kept.emplace_back(std::stoll(digits), entry.path());
  }
  std::sort(kept.begin(), kept.end());
  return kept;
}

void keep_checkpoint(const std::filesystem::path& run_dir, const std::filesystem::path& latest, int64_t global_step,
                     int64_t keep) {
  // A hard link costs no space and is as atomic as the rename that made `latest`: the kept name
  // appears whole or not at all. Where links are impossible (some file systems) it is a copy,
  // written atomically too.
  const std::filesystem::path kept = kept_checkpoint_path(run_dir, global_step);
  // Named as write_file_atomically names its temporaries, so that a process killed between the
  // two steps leaves a file the next start-up's stale-temporary sweep removes.
  const std::filesystem::path staging = core::temporary_path(kept);
  std::error_code error;
  std::filesystem::create_hard_link(latest, staging, error);
  if (error) std::filesystem::copy_file(latest, staging, std::filesystem::copy_options::overwrite_existing);
  std::filesystem::rename(staging, kept);
  // Kept checkpoints beyond this step were left by a run this one resumed from before their step
  // (an older checkpoint put back by hand): they are not this run's history.
  auto all = kept_checkpoints(run_dir);
  while (!all.empty() && all.back().first > global_step) {
    std::filesystem::remove(all.back().second, error);
    all.pop_back();
  }
  for (size_t i = 0; i + static_cast<size_t>(keep) < all.size(); ++i) std::filesystem::remove(all[i].second, error);
}

namespace {

int64_t counter(const core::Checkpoint& checkpoint, const char* name, const std::filesystem::path& file) {
  const auto found = checkpoint.metadata.find(name);
  if (found == checkpoint.metadata.end() || !found->is_number_integer() || found->get<int64_t>() < 0) {
    throw core::CheckpointError(core::CheckpointError::Kind::kCorrupt, file,
                                std::string("metadata '") + name + "' is missing or not a non-negative integer");
  }
  return found->get<int64_t>();
}

int64_t get_int_or(const core::Config& config, const std::string& key, int64_t fallback) {
  return config.schema().contains(key) ? config.get_int(key) : fallback;
}

}  // namespace

policies::TrainingState checked_training_state(const core::Checkpoint& checkpoint, const core::Config& config,
                                               const std::filesystem::path& file) {
  policies::TrainingState state;
  state.global_step = counter(checkpoint, "global_step", file);
  state.updates = counter(checkpoint, "updates", file);
  auto fail = [&](const std::string& problem) {
    throw core::CheckpointError(core::CheckpointError::Kind::kCorrupt, file,
                                "inconsistent metadata: global_step " + std::to_string(state.global_step) +
                                    " with updates " + std::to_string(state.updates) + " " + problem);
  };
  // Every update trains on at least one step.
  if (state.updates > state.global_step) fail("(more updates than steps)");
  // An update learns from the policy's rounds (every env stepping one rollout); a stop may count
  // the steps of one round collected but not yet trained.
  // (Names that are not registered are refused when the run is built.)
  const std::string algo = config.get_string("train.algo"), policy = config.get_string("train.policy");
  const auto known = [](const std::vector<std::string>& names, const std::string& name) {
    return std::find(names.begin(), names.end(), name) != names.end();
  };
  if (!known(algos::algorithm_names(), algo) || !known(policies::policy_names(), policy)) return state;
  const int64_t num_envs = get_int_or(config, "env.num_envs", 0);
  const int64_t rollout = algos::rollout_steps(algo, config);
  if (num_envs < 1 || rollout < 1) return state;
  const int64_t rounds_per_update = std::max<int64_t>(1, policies::rounds_per_update(policy, config));
  const long double most = static_cast<long double>(state.updates + 1) * static_cast<long double>(rounds_per_update) *
                           static_cast<long double>(num_envs) * static_cast<long double>(rollout);
  if (static_cast<long double>(state.global_step) > most) {
    fail("(at most " + std::to_string(static_cast<int64_t>(std::min<long double>(most, 9.2e18L))) +
         " steps with env.num_envs " + std::to_string(num_envs) + " and rollouts of " + std::to_string(rollout) +
         " steps)");
  }
  return state;
}

core::Config checkpoint_config(const core::Checkpoint& checkpoint, const std::filesystem::path& file) {
  const auto found = checkpoint.metadata.find("config");
  if (found == checkpoint.metadata.end() || !found->is_string()) {
    throw core::CheckpointError(core::CheckpointError::Kind::kCorrupt, file,
                                "holds no training config (not written by concord train)");
  }
  core::Config config(concord_schema());
  config.merge_toml(found->get<std::string>(), "'" + file.string() + "'");
  return config;
}

core::Config resumed_run_config(const std::string& run_dir) {
  if (!std::filesystem::is_directory(run_dir)) {
    throw std::invalid_argument("--resume: run directory '" + run_dir + "' does not exist");
  }
  core::Config config(concord_schema());
  config.merge_file((std::filesystem::path(run_dir) / "config.toml").string());
  return config;
}

void check_resumable(const core::Config& trained_with, const core::Config& config, const std::filesystem::path& file,
                     const std::set<std::string>& may_change) {
  for (const auto& [key, entry] : config.schema().entries()) {
    if (may_change.count(key) > 0) continue;
    // nan is a value here (the MuJoCo settings' "the task's own"), equal to itself.
    const auto* was = std::get_if<double>(&trained_with.get(key));
    const auto* is = std::get_if<double>(&config.get(key));
    if (was != nullptr && is != nullptr && std::isnan(*was) && std::isnan(*is)) continue;
    if (trained_with.get(key) != config.get(key)) {
      throw core::CheckpointError(core::CheckpointError::Kind::kCorrupt, file,
                                  "was trained with a different " + key + " than the run's config.toml says");
    }
  }
}

std::filesystem::path resolve_checkpoint(const std::filesystem::path& run_dir_or_file) {
  if (std::filesystem::is_directory(run_dir_or_file)) return checkpoint_path(run_dir_or_file);
  return run_dir_or_file;
}

}  // namespace concord::cli
