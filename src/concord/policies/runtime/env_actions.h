#pragma once

#include <torch/types.h>

#include "concord/envs/space.h"
#include "concord/envs/vector_env.h"

namespace concord::policies::runtime {

// The boundary between an actor's actions and VectorEnv::step, the same for training, evaluation
// and every policy: discrete actions go to the envs as int64; continuous ones are clipped to the
// action space's bounds first (what Gymnasium's ClipAction wrapper does), while the actor and the
// rollout keep the unclipped sample its log-probability belongs to.
class EnvActions {
 public:
  // `device` is where the actions will live (the bounds are kept there).
  EnvActions(const envs::Space& action_space, torch::Device device);

  // Steps `env` with `actions` (int64 [B] or float [B, d], on the device) and returns its batch.
  envs::Batch step(envs::BatchedEnvs& env, const torch::Tensor& actions) const;

 private:
  bool discrete_;
  torch::Tensor low_, high_;  // continuous actions only
};

}  // namespace concord::policies::runtime
