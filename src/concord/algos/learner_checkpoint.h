#pragma once

#include <torch/optim/optimizer.h>

#include <cstdint>
#include <string>

#include "concord/algos/reward_scaler.h"
#include "concord/core/checkpoint.h"
#include "concord/nn/actor_critic.h"

namespace concord::algos {

// How an actor-critic learner (A2C, PPO) lays itself out in a core::Checkpoint: parameters and
// buffers (the observation statistics, when the model normalises observations) as
// "model/<name>", the optimiser state as "optimizer" (a 1-D uint8 tensor of LibTorch's archive
// bytes), the reward scaler's tensors when the learner scales rewards (see reward_scaler.h),
// metadata "algorithm" and "updates". `reward_scaler` is nullptr when rewards are not scaled.
//
// Checkpoints written before buffers existed hold parameters only; they load into any model
// without buffers, which is every model that does not normalise observations.
void save_learner_state(core::Checkpoint& checkpoint, const std::string& algorithm, const nn::ActorCritic& model,
                        const torch::optim::Optimizer& optimizer, int64_t updates,
                        const RewardScaler* reward_scaler = nullptr);

// The inverse of save_learner_state; returns the update count. Throws core::CheckpointError
// (kTensorMissing or kCorrupt) naming what is missing or mismatched, including a reward scaler's
// state that the learner has no use for. Checks everything (reading the optimiser state into
// `scratch`, an optimiser of the same kind over the same parameters) before changing anything,
// so a failed load leaves `model`, `optimizer` and `reward_scaler` as they were.
int64_t load_learner_state(const core::Checkpoint& checkpoint, const std::string& algorithm,
                           const nn::ActorCritic& model, torch::optim::Optimizer& optimizer,
                           torch::optim::Optimizer& scratch, RewardScaler* reward_scaler = nullptr);

}  // namespace concord::algos
