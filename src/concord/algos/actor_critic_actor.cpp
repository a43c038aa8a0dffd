#include "concord/algos/actor_critic_actor.h"

#include <utility>

namespace concord::algos {

ActorOutput ActorCriticActor::act(const ActorInput& input, const ActingContext& context) {
  if (model_->recurrent()) {
    nn::RecurrentActResult result =
        model_->act(input.observations, input.state, input.episode_starts, context.deterministic);
    return {
        result.act.action, {{"log_probs", result.act.log_prob}, {"values", result.act.value}}, std::move(result.state)};
  }
  nn::ActResult result = model_->act(input.observations, context.deterministic);
  return {result.action, {{"log_probs", result.log_prob}, {"values", result.value}}, {}};
}

torch::Tensor ActorCriticActor::bootstrap_value(const ActorInput& input) {
  if (model_->recurrent()) return model_->value(input.observations, input.state, input.episode_starts);
  return model_->value(input.observations);
}

}  // namespace concord::algos
