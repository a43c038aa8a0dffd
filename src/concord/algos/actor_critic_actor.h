#pragma once

#include "concord/algos/actor.h"
#include "concord/nn/actor_critic.h"

namespace concord::algos {

// The Actor of the on-policy actor-critic algorithms: a sample from pi(. | o), or its mode when
// deterministic, with the extras their learners read back from the Rollout:
//   "log_probs"  log pi(a | o) of the chosen action, [B]
//   "values"     V(o), [B]
// The network is shared with the learner (a ModuleHolder), so this acts with its current
// parameters.
class ActorCriticActor : public Actor {
 public:
  explicit ActorCriticActor(nn::ActorCritic model) : model_(std::move(model)) {}
  ActorOutput act(const torch::Tensor& observations, const ActingContext& context) override;

 private:
  nn::ActorCritic model_;
};

}  // namespace concord::algos
