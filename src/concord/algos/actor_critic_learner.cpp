#include "concord/algos/actor_critic_learner.h"

#include <stdexcept>
#include <utility>
#include <vector>

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
  if (!primary.step_lock_) primary.step_lock_ = std::make_shared<std::mutex>();
  step_lock_ = primary.step_lock_;
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
  if (model_->recurrent()) {
    if (!rollout.episode_starts.defined()) {
      throw std::invalid_argument(algorithm_ +
                                  ": a network with memory learns from rollouts that say where episodes start; this "
                                  "one was collected without them");
    }
    batch.episode_starts = rollout.episode_starts.to(device);
    for (const auto& [name, tensor] : rollout.initial_state) batch.initial_state[name] = tensor.to(device);
  }
  if (rollout.final_observations.defined()) {
    batch.truncation_values =
        model_->recurrent()
            ? model_->final_values_sequence(rollout.observations.to(device), rollout.final_observations.to(device),
                                            batch.truncated, batch.episode_starts, batch.initial_state)
            : final_values(rollout.final_observations.to(device), batch.truncated);
  }
  if (rollout.next_observations.defined()) batch.next_observations = rollout.next_observations.to(device);
  batch.observations = rollout.observations.to(device).flatten(0, 1);
  batch.actions = rollout.actions.to(device).flatten(0, 1);
  return batch;
}

// The learner's critic, not the acting one, values a truncated episode's end: under a lagged
// policy the acting critic is one or more updates old, and V-trace, which takes every other value
// from the learner's critic, would set the two side by side in every target before the
// truncation. Only the steps with a truncation are evaluated (most rollouts have none), each over
// all B envs: the forward pass the policies used to make while acting, so that at lag 0 the
// values are the same to the bit.
at::Tensor ActorCriticLearner::final_values(const at::Tensor& final_observations, const at::Tensor& truncated) {
  at::Tensor values = at::zeros(truncated.sizes(), truncated.options());
  const at::Tensor steps = truncated.gt(0.0).any(1).nonzero().squeeze(1).cpu();
  c10::NoGradGuard no_grad;
  for (const int64_t t : std::vector<int64_t>(steps.data_ptr<int64_t>(), steps.data_ptr<int64_t>() + steps.numel())) {
    const at::Tensor step_values = model_->value(final_observations[t]).to(values.scalar_type());
    values[t].copy_(at::where(truncated[t].gt(0.0), step_values, at::zeros_like(step_values)));
  }
  return values;
}

double ActorCriticLearner::set_learning_rate(double learning_rate, bool anneal, double progress) {
  const double lr = linear_schedule(learning_rate, anneal, progress);
  for (auto& group : optimizer_->param_groups()) group.options().set_lr(lr);
  return lr;
}

void ActorCriticLearner::step(const at::Tensor& loss, double max_grad_norm) {
  gradient_step(loss, parameters_, *optimizer_, max_grad_norm, sync_strategy(), step_lock_.get());
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
