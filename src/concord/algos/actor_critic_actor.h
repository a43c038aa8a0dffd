#pragma once

#include "concord/algos/actor.h"
#include "concord/nn/actor_critic.h"

namespace concord::algos {

// The Actor of the on-policy actor-critic algorithms: a sample from pi(. | o), or its mode when
// deterministic, with the extras their learners read back from the Rollout:
//   "log_probs"  log pi(a | o) of the chosen action, [B]
//   "values"     V(o), [B]
// The network is shared with the learner (a ModuleHolder), so this acts with its current
// parameters. A network with memory (nn::ActorCritic::recurrent) acts from the state its last
// act() returned, which the policy hands back (algos/actor.h).
class ActorCriticActor : public Actor {
 public:
  explicit ActorCriticActor(nn::ActorCritic model) : model_(std::move(model)) {}
  ActorOutput act(const ActorInput& input, const ActingContext& context) override;
  // V(o) of the network's critic.
  torch::Tensor bootstrap_value(const ActorInput& input) override;

 private:
  nn::ActorCritic model_;
};

}  // namespace concord::algos
