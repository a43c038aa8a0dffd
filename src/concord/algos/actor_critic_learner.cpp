#include "concord/algos/actor_critic_learner.h"

#include <utility>

#include "concord/algos/gradient_step.h"
#include "concord/algos/learner_checkpoint.h"
#include "concord/algos/shared_optimizer_state.h"

namespace concord::algos {

ActorCriticLearner::ActorCriticLearner(std::string algorithm, const nn::ActorCriticConfig& network,
                                       torch::Device device, std::optional<double> reward_gamma,
                                       OptimizerFactory make_optimizer)
    : algorithm_(std::move(algorithm)),
      make_optimizer_(std::move(make_optimizer)),
      model_(nn::build_actor_critic(network, device)),
      parameters_(*model_),
      optimizer_(make_optimizer_(parameters_)),
      reward_scaler_(reward_gamma ? std::make_optional<RewardScaler>(RewardScalerConfig{*reward_gamma})
                                  : std::nullopt) {}

ActorCriticLearner::ActorCriticLearner(ActorCriticLearner& primary)
    : algorithm_(primary.algorithm_),
      make_optimizer_(primary.make_optimizer_),
      model_(nn::build_actor_critic(primary.model_->config(), primary.parameters_.values().device())),
      parameters_(*model_, primary.parameters_),
      optimizer_(make_optimizer_(parameters_)),
      reward_scaler_(primary.reward_scaler_) {
  share_optimizer_state(*optimizer_, *primary.optimizer_);
  share_observation_statistics(model_, primary.model_);
}

ActorCriticLearner::Batch ActorCriticLearner::prepare(const Rollout& rollout) {
  const at::Device device = parameters_.values().device();
  Batch batch;
  batch.rewards = reward_scaler_
                      ? reward_scaler_->scale(rollout.rewards, rollout.terminated, rollout.truncated).to(device)
                      : rollout.rewards.to(device);
  batch.values = rollout.values.detach().to(device);
  batch.log_probs = rollout.log_probs.detach().to(device);
  batch.terminated = rollout.terminated.to(device);
  batch.truncated = rollout.truncated.to(device);
  batch.bootstrap_value = rollout.bootstrap_value.detach().to(device);
  if (rollout.truncation_values.defined()) batch.truncation_values = rollout.truncation_values.to(device);
  if (rollout.next_observations.defined()) batch.next_observations = rollout.next_observations.to(device);
  batch.observations = rollout.observations.to(device).flatten(0, 1);
  batch.actions = rollout.actions.to(device).flatten(0, 1);
  return batch;
}

double ActorCriticLearner::set_learning_rate(double learning_rate, bool anneal, double progress) {
  const double lr = anneal ? (1.0 - progress) * learning_rate : learning_rate;
  for (auto& group : optimizer_->param_groups()) group.options().set_lr(lr);
  return lr;
}

void ActorCriticLearner::step(const at::Tensor& loss, double max_grad_norm) {
  gradient_step(loss, parameters_, *optimizer_, max_grad_norm, sync_strategy());
}

void ActorCriticLearner::finish_update(const at::Tensor& observations) {
  ++updates_;
  model_->update_observation_stats(observations);
}

void ActorCriticLearner::save(core::Checkpoint& checkpoint) const {
  save_learner_state(checkpoint, algorithm_, model_, *optimizer_, updates_,
                     reward_scaler_ ? &*reward_scaler_ : nullptr);
}

void ActorCriticLearner::load(const core::Checkpoint& checkpoint) {
  const std::unique_ptr<torch::optim::Optimizer> scratch = make_optimizer_(parameters_);
  updates_ = load_learner_state(checkpoint, algorithm_, model_, *optimizer_, *scratch,
                                reward_scaler_ ? &*reward_scaler_ : nullptr);
}

}  // namespace concord::algos
