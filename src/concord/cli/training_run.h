#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <torch/types.h>

#include "concord/algos/learner.h"
#include "concord/core/config.h"
#include "concord/envs/vector_env.h"
#include "concord/policies/single.h"

namespace concord::cli {

// The one path from a resolved config to training, shared by `concord train` and
// bench/learning. The constructor, in this order:
//
//   checks train.total_timesteps and train.checkpoint_interval_steps, resolves run.device,
//   seeds LibTorch with run.seed, sets run.torch_threads, builds the VectorEnv ([env]),
//   the learner (train.algo, [algo]) on the device, and the `single` policy over them.
//
// Everything that can reject the config happens there, before a caller creates a run directory;
// it throws core::ConfigError or std::invalid_argument naming the problem. It writes nothing to
// disk and logs nothing: run directories, progress and checkpoints are the caller's, through
// train()'s callbacks. Not thread-safe.
class TrainingRun {
 public:
  explicit TrainingRun(const core::Config& config);

  // Trains from `state` (fresh, or restored from a checkpoint into learner()) until
  // train.total_timesteps or until callbacks.should_stop(); see SinglePolicy::train.
  void train(policies::TrainingState& state, const policies::TrainingCallbacks& callbacks);

  algos::Learner& learner() { return *learner_; }
  const envs::VectorEnv& env() const { return *env_; }
  const std::string& algo() const { return algo_; }
  torch::Device device() const { return device_; }
  int64_t total_steps() const { return total_steps_; }

 private:
  int64_t total_steps_;
  int64_t checkpoint_interval_;
  torch::Device device_;
  std::string algo_;
  std::unique_ptr<envs::VectorEnv> env_;
  std::unique_ptr<algos::Learner> learner_;
  std::unique_ptr<policies::SinglePolicy> policy_;  // refers to *env_ and *learner_
};

}  // namespace concord::cli
