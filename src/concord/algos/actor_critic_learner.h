#pragma once

#include <ATen/core/Tensor.h>
#include <torch/optim/optimizer.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "concord/algos/on_policy_learner.h"
#include "concord/algos/reward_scaler.h"
#include "concord/nn/actor_critic.h"
#include "concord/nn/flat_parameters.h"

namespace concord::algos {

// A coefficient's linear schedule over training (CleanRL's learning-rate annealing, RL Zoo's "lin_"
// schedules): (1 - progress) * initial if annealed, else initial.
inline double linear_schedule(double initial, bool anneal, double progress) {
  return anneal ? (1.0 - progress) * initial : initial;
}

// What the on-policy actor-critic learners (A2C, PPO) share, written once, so that each
// algorithm's file holds only its update, reading like its paper:
//
//   the network, its flat parameters and the optimiser over them; the optional reward scaler;
//   the update count; shared replicas (Hogwild!, A3C's shared optimiser statistics);
//   checkpoints (learner_checkpoint.h); and the steps every update takes in the same order:
//
//   lr = set_learning_rate(rate, anneal, progress)   (1 - progress) * rate if annealed
//   b = prepare(rollout)                              on the model's device, rewards scaled
//   ... the algorithm's own targets and loss ...
//   step(loss, max_grad_norm)                         gradient_step.h, around the sync strategy
//   finish_update(b.observations)                     count; observation statistics move last
class ActorCriticLearner : public OnPolicyLearner {
 public:
  nn::ActorCritic model() override { return model_; }
  nn::FlatParameters& flat_parameters() override { return parameters_; }

  // Tensors "model/<parameter or buffer name>", "optimizer" (the optimiser's state,
  // LibTorch-serialised into a uint8 tensor) and, with a reward scaler, "reward_scaler/...";
  // metadata "algorithm" and "updates" (see learner_checkpoint.h).
  void save(core::Checkpoint& checkpoint) const override;
  // Checks everything before changing anything; throws core::CheckpointError naming a missing,
  // unexpected or mis-shaped tensor, another algorithm's checkpoint, or unreadable optimiser state.
  void load(const core::Checkpoint& checkpoint) override;

  // Updates done so far (restored by load()).
  int64_t updates() const { return updates_; }

  // The optimiser over flat_parameters(), as the algorithm built it from its config (benchmarks
  // step it to time an update's parts).
  torch::optim::Optimizer& optimizer() { return *optimizer_; }
  // A recurrent network (algo.recurrent) acts with memory.
  bool acts_with_memory() const override { return model_->recurrent(); }

 protected:
  using OptimizerFactory = std::function<std::unique_ptr<torch::optim::Optimizer>(const nn::FlatParameters&)>;

  // Builds the network on `device` and the optimiser over its flat parameter buffer. With
  // `reward_gamma`, rewards are scaled by the running std of the gamma-discounted return.
  ActorCriticLearner(std::string algorithm, const nn::ActorCriticConfig& network, torch::Device device,
                     std::optional<double> reward_gamma, OptimizerFactory make_optimizer);
  // A replica whose parameters, optimiser statistics and observation statistics are primary's
  // (shared storage), with a gradient buffer of its own (see Learner::make_shared_replica).
  explicit ActorCriticLearner(ActorCriticLearner& primary);

  // A rollout as an update reads it, on the model's device.
  struct Batch {
    at::Tensor rewards;                           // [T, B], scaled when the learner scales rewards
    at::Tensor values;                            // [T, B], detached: V(o_t) when acting
    at::Tensor log_probs;                         // [T, B], detached: log pi(a_t | o_t) when acting
    at::Tensor terminated, truncated;             // [T, B]
    at::Tensor bootstrap_value;                   // [B], detached: V(o_T) when acting
    at::Tensor next_observations;                 // [B, ...]: o_T, when the policy recorded it
    std::optional<at::Tensor> truncation_values;  // [T, B]: V(final observation) where truncated, from
                                                  //   this learner's critic, when the policy recorded them
    at::Tensor observations;                      // [T * B, ...]: flattened
    at::Tensor actions;                           // [T * B, ...]: flattened
    // A network with memory's (nn::ActorCritic::recurrent), for re-running each env's sequence:
    at::Tensor episode_starts;      // [T, B]
    core::TensorMap initial_state;  // each [B, ...]; empty: the initial state
  };
  Batch prepare(const Rollout& rollout);
  // [T, B]: V(final_observations[t, b]) from this learner's critic where truncated[t, b], else 0.
  at::Tensor final_values(const at::Tensor& final_observations, const at::Tensor& truncated);

  // Sets the optimiser's rate for this update and returns it.
  double set_learning_rate(double learning_rate, bool anneal, double progress);

  // One optimiser step on `loss` (gradient_step.h), through this learner's sync strategy.
  void step(const at::Tensor& loss, double max_grad_norm);

  // Counts the update, then lets the observation statistics move: every gradient step of the
  // update saw the rollout as it was acted on.
  void finish_update(const at::Tensor& observations);

 private:
  std::string algorithm_;
  OptimizerFactory make_optimizer_;
  nn::ActorCritic model_;
  nn::FlatParameters parameters_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  // Shared by a learner and its replicas once one is made: their optimiser steps take turns
  // (gradient_step's step_lock).
  std::shared_ptr<std::mutex> step_lock_;
  std::optional<RewardScaler> reward_scaler_;
  int64_t updates_ = 0;
};

}  // namespace concord::algos
