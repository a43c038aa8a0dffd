#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <torch/types.h>

#include "concord/algos/learner.h"
#include "concord/comm/communicator.h"
#include "concord/core/checkpoint.h"
#include "concord/core/config.h"
#include "concord/envs/env.h"
#include "concord/envs/vector_env.h"
#include "concord/explore/bonus.h"
#include "concord/policies/policy.h"

namespace concord::cli {

// The one path from a resolved config to training, shared by `concord train` and
// bench/learning. The constructor, in this order:
//
//   checks train.total_timesteps, train.checkpoint_interval_steps, train.checkpoint_interval_seconds,
//   train.keep_checkpoints and log.interval_steps, resolves run.device,
//   joins the other ranks when the policy spans processes (comm::connect from torchrun's or
//   mpirun's variables, refusing a config that differs between ranks; without a launcher the
//   run is a world of one), seeds LibTorch with run.seed (and envs with it; ranks > 0, and a
//   run resumed from a checkpoint, derive their own seeds), sets run.torch_threads, builds the learner (train.algo,
//   [algo]) on the device, builds the exploration bonus ([explore], none by default), restores `resume_from` into both
//   when given, then builds the distribution policy (train.policy) with its environments ([env]), every actor of which
//   adds the one bonus.
//
// A single-process policy started by a launcher with WORLD_SIZE > 1 is refused: every rank would
// train alone and write the same run.
//
// The checkpoint is restored before the policy exists because policies copy or share the
// learner's parameters and optimiser statistics when they are built (hogwild's replicas alias
// them). Everything that can reject the config happens in the constructor, before a caller
// creates a run directory; it throws core::ConfigError, std::invalid_argument or
// core::CheckpointError naming the problem. It writes nothing to disk and logs nothing: run
// directories, progress and checkpoints are the caller's, through train()'s callbacks.
class TrainingRun {
 public:
  explicit TrainingRun(const core::Config& config, const core::Checkpoint* resume_from = nullptr);

  // Trains from `state` until train.total_timesteps or until callbacks.should_stop(); see
  // policies::Policy::train.
  void train(policies::TrainingState& state, const policies::TrainingCallbacks& callbacks);

  algos::Learner& learner() { return *learner_; }
  // The exploration bonus (explore.bonus), or null for "none"; saved in checkpoints beside the learner.
  explore::Bonus* bonus() { return bonus_.get(); }
  const envs::VectorEnvConfig& env_config() const { return env_config_; }
  const envs::EnvSpec& env_spec() const { return env_spec_; }
  const std::string& algo() const { return algo_; }
  const std::string& policy_name() const { return policy_name_; }
  torch::Device device() const { return device_; }
  int64_t total_steps() const { return total_steps_; }
  // train.checkpoint_interval_seconds: wall time between checkpoints the caller asks for through
  // TrainingCallbacks::checkpoint_requested (0: none).
  double checkpoint_interval_seconds() const { return checkpoint_interval_seconds_; }
  // log.interval_steps: env steps between the metric records the caller writes (0: every update).
  int64_t log_interval_steps() const { return log_interval_steps_; }
  // This process's rank and the number of ranks (0 and 1 for single-process policies). Only
  // rank 0 should write run directories, metrics and checkpoints.
  int rank() const { return communicator_ ? communicator_->rank() : 0; }
  int world_size() const { return communicator_ ? communicator_->world_size() : 1; }

 private:
  int64_t total_steps_;
  int64_t checkpoint_interval_;
  double checkpoint_interval_seconds_;
  int64_t log_interval_steps_;
  torch::Device device_;
  std::string algo_;
  std::string policy_name_;
  envs::VectorEnvConfig env_config_;
  envs::EnvSpec env_spec_;
  std::unique_ptr<comm::Communicator> communicator_;  // for policies that span processes
  std::unique_ptr<algos::Learner> learner_;
  std::unique_ptr<explore::Bonus> bonus_;     // may be null
  std::unique_ptr<policies::Policy> policy_;  // refers to *learner_
};

}  // namespace concord::cli
