#pragma once

#include <torch/optim/optimizer.h>

#include <cstdint>
#include <string>

#include "concord/core/checkpoint.h"
#include "concord/nn/actor_critic.h"

namespace concord::algos {

// How an actor-critic learner (A2C, PPO) lays itself out in a core::Checkpoint: parameters as
// "model/<name>", the optimiser state as "optimizer" (a 1-D uint8 tensor of LibTorch's archive
// bytes), metadata "algorithm" and "updates".
void save_learner_state(core::Checkpoint& checkpoint, const std::string& algorithm,
                        const nn::ActorCritic& model, const torch::optim::Optimizer& optimizer,
                        int64_t updates);

// The inverse of save_learner_state; returns the update count. Throws core::CheckpointError
// (kTensorMissing or kCorrupt) naming what is missing or mismatched. Checks everything (reading
// the optimiser state into `scratch`, an optimiser of the same kind over the same parameters)
// before changing anything, so a failed load leaves `model` and `optimizer` as they were.
int64_t load_learner_state(const core::Checkpoint& checkpoint, const std::string& algorithm,
                           const nn::ActorCritic& model, torch::optim::Optimizer& optimizer,
                           torch::optim::Optimizer& scratch);

}  // namespace concord::algos
