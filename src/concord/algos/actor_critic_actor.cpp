#include "concord/algos/actor_critic_actor.h"

namespace concord::algos {

ActorOutput ActorCriticActor::act(const torch::Tensor& observations, const ActingContext& context) {
  nn::ActResult result = model_->act(observations, context.deterministic);
  return {result.action, {{"log_probs", result.log_prob}, {"values", result.value}}};
}

}  // namespace concord::algos
