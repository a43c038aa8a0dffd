#include "concord/algos/a2c.h"

#include <torch/optim/adam.h>
#include <torch/optim/rmsprop.h>

#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "concord/algos/gae.h"
#include "concord/algos/gradient_step.h"
#include "concord/algos/learner_checkpoint.h"
#include "concord/algos/returns.h"
#include "concord/algos/shared_optimizer_state.h"
#include "concord/algos/statistics.h"
#include "concord/algos/tensor_checks.h"
#include "concord/algos/vtrace.h"
#include "concord/core/config_problems.h"

namespace concord::algos {
namespace {

constexpr const char* kAlgorithm = "a2c";
constexpr const char* kLossFn = "a2c_loss";

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const A2cConfig& config, const nn::FlatParameters& parameters) {
  if (config.optimizer == "adam") {
    return std::make_unique<torch::optim::Adam>(
        std::vector<torch::Tensor>{parameters.values()},
        torch::optim::AdamOptions(config.learning_rate).eps(config.optimizer_eps));
  }
  return std::make_unique<torch::optim::RMSprop>(
      std::vector<torch::Tensor>{parameters.values()},
      torch::optim::RMSpropOptions(config.learning_rate).alpha(config.rmsprop_alpha).eps(config.optimizer_eps));
}

}  // namespace

const core::ConfigFields<A2cConfig>& A2cConfig::fields() {
  static const core::ConfigFields<A2cConfig> kFields = {
      {"learning_rate", &A2cConfig::learning_rate, "Optimiser step size (the initial one when annealed)"},
      {"num_steps", &A2cConfig::num_steps, "Steps of each environment per rollout (T)"},
      {"anneal_lr", &A2cConfig::anneal_lr, "Decay the learning rate linearly to 0 over training"},
      {"gamma", &A2cConfig::gamma, "Discount factor"},
      {"gae_lambda", &A2cConfig::gae_lambda, "1: plain n-step returns; < 1: GAE with this lambda"},
      {"optimizer", &A2cConfig::optimizer, "rmsprop or adam"},
      {"rmsprop_alpha", &A2cConfig::rmsprop_alpha, "RMSprop smoothing constant"},
      {"optimizer_eps", &A2cConfig::optimizer_eps, "RMSprop / Adam epsilon"},
      {"norm_adv", &A2cConfig::norm_adv, "Normalise advantages over each batch"},
      {"ent_coef", &A2cConfig::ent_coef, "Entropy bonus coefficient"},
      {"vf_coef", &A2cConfig::vf_coef, "Value loss coefficient"},
      {"max_grad_norm", &A2cConfig::max_grad_norm, "Gradient-norm clipping threshold"},
      {"vtrace", &A2cConfig::vtrace,
       "V-trace targets and advantages, correcting for policy lag (e.g. central_inference)"},
      {"vtrace_rho_bar", &A2cConfig::vtrace_rho_bar, "V-trace importance-ratio clip (rho bar)"},
      {"vtrace_c_bar", &A2cConfig::vtrace_c_bar, "V-trace trace-cutting clip (c bar)"},
      {"normalize_reward", &A2cConfig::normalize_reward,
       "Scale rewards by the running std of the discounted return, clipped to +-10 (Gymnasium's NormalizeReward)"},
  };
  return kFields;
}

void A2cConfig::validate() const {
  core::ConfigProblems problems;
  problems.check(learning_rate > 0.0, "learning_rate", learning_rate, "> 0");
  problems.check(num_steps >= 1, "num_steps", num_steps, ">= 1");
  problems.check(gamma >= 0.0 && gamma <= 1.0, "gamma", gamma, "in [0, 1]");
  problems.check(gae_lambda >= 0.0 && gae_lambda <= 1.0, "gae_lambda", gae_lambda, "in [0, 1]");
  problems.check(optimizer == "rmsprop" || optimizer == "adam", "optimizer", "\"" + optimizer + "\"",
                 "\"rmsprop\" or \"adam\"");
  problems.check(rmsprop_alpha >= 0.0 && rmsprop_alpha < 1.0, "rmsprop_alpha", rmsprop_alpha, "in [0, 1)");
  problems.check(optimizer_eps > 0.0, "optimizer_eps", optimizer_eps, "> 0");
  problems.check(ent_coef >= 0.0, "ent_coef", ent_coef, ">= 0");
  problems.check(vf_coef >= 0.0, "vf_coef", vf_coef, ">= 0");
  problems.check(max_grad_norm > 0.0, "max_grad_norm", max_grad_norm, "> 0");
  problems.check(vtrace_rho_bar > 0.0, "vtrace_rho_bar", vtrace_rho_bar, "> 0");
  problems.check(vtrace_c_bar > 0.0, "vtrace_c_bar", vtrace_c_bar, "> 0");
  problems.check(!vtrace || gae_lambda == 1.0, "gae_lambda", gae_lambda,
                 "1 when vtrace is on (V-trace has lambda = 1)");
  problems.throw_if_any("A2cConfig");
}

A2cLoss a2c_loss(const at::Tensor& log_probs, const at::Tensor& advantages, const at::Tensor& values,
                 const at::Tensor& returns, const at::Tensor& entropy, double ent_coef, double vf_coef) {
  const int64_t n = log_probs.defined() && log_probs.dim() == 1 ? log_probs.size(0) : -1;
  tensor_checks::check_1d(kLossFn, "log_probs", log_probs, n);
  tensor_checks::check_1d(kLossFn, "advantages", advantages, n);
  tensor_checks::check_1d(kLossFn, "values", values, n);
  tensor_checks::check_1d(kLossFn, "returns", returns, n);
  tensor_checks::check_1d(kLossFn, "entropy", entropy, n);

  // Policy gradient: raise the log-probability of actions in proportion to their advantage.
  const at::Tensor policy_loss = -(advantages.detach() * log_probs).mean();
  // Value regression towards the bootstrapped returns.
  const at::Tensor value_loss = (returns - values).square().mean();
  // Entropy bonus, against premature convergence.
  const at::Tensor entropy_mean = entropy.mean();

  A2cLoss out;
  out.loss = policy_loss + vf_coef * value_loss - ent_coef * entropy_mean;
  out.policy_loss = policy_loss.detach();
  out.value_loss = value_loss.detach();
  out.entropy = entropy_mean.detach();
  return out;
}

A2c::A2c(A2cConfig config, torch::Device device)
    : config_(core::validated(std::move(config))),
      model_(nn::build_actor_critic(config_.network, device)),
      parameters_(*model_),
      optimizer_(make_optimizer(config_, parameters_)),
      reward_scaler_(config_.normalize_reward ? std::make_optional<RewardScaler>(RewardScalerConfig{config_.gamma})
                                              : std::nullopt) {}

A2c::A2c(A2c& primary)
    : config_(primary.config_),
      model_(nn::build_actor_critic(config_.network, primary.parameters_.values().device())),
      parameters_(*model_, primary.parameters_),
      optimizer_(make_optimizer(config_, parameters_)),
      reward_scaler_(primary.reward_scaler_) {
  share_optimizer_state(*optimizer_, *primary.optimizer_);
  share_observation_statistics(model_, primary.model_);
}

std::unique_ptr<Learner> A2c::make_shared_replica() { return std::unique_ptr<Learner>(new A2c(*this)); }

Metrics A2c::update(const Rollout& rollout, double progress) {
  const int64_t num_steps = rollout.num_steps();
  const int64_t batch_size = num_steps * rollout.num_envs();
  const int64_t min_batch = config_.norm_adv ? 2 : 1;
  if (num_steps != config_.num_steps || batch_size < min_batch || !(progress >= 0.0 && progress <= 1.0)) {
    std::ostringstream out;
    out << "A2c::update: need T = num_steps = " << config_.num_steps << ", T * B >= " << min_batch
        << " and progress in [0, 1]; got T = " << num_steps << ", B = " << rollout.num_envs()
        << ", progress = " << progress;
    throw std::invalid_argument(out.str());
  }
  const at::Device device = model_->parameters().front().device();

  // Annealing the rate if instructed to do so.
  const double lr = config_.anneal_lr ? (1.0 - progress) * config_.learning_rate : config_.learning_rate;
  for (auto& group : optimizer_->param_groups()) group.options().set_lr(lr);

  // Bootstrapped returns: n-step (gae_lambda = 1) or GAE's, truncated episodes bootstrapping
  // from truncation_values; advantage = return - value when acting. Rewards are scaled by the
  // running std of the discounted return, if asked.
  const at::Tensor values = rollout.values.detach().to(device);
  const at::Tensor rewards =
      reward_scaler_ ? reward_scaler_->scale(rollout.rewards, rollout.terminated, rollout.truncated).to(device)
                     : rollout.rewards.to(device);
  const at::Tensor terminated = rollout.terminated.to(device);
  const at::Tensor truncated = rollout.truncated.to(device);
  const at::Tensor bootstrap_value = rollout.bootstrap_value.detach().to(device);
  std::optional<at::Tensor> truncation_values;
  if (rollout.truncation_values.defined()) truncation_values = rollout.truncation_values.to(device);

  // Flatten the batch: [T, B, ...] -> [T * B, ...].
  const at::Tensor b_obs = rollout.observations.to(device).flatten(0, 1);
  const at::Tensor b_actions = rollout.actions.to(device).flatten(0, 1);
  const nn::ActionEvaluation eval = model_->evaluate(b_obs, b_actions);

  at::Tensor b_returns;
  at::Tensor b_values;
  at::Tensor b_advantages;
  if (config_.vtrace) {
    // Off-policy correction: importance-weighted targets from the current policy and critic.
    const auto shape = rewards.sizes();
    const at::Tensor current_values = eval.value.detach().reshape(shape);
    at::Tensor step_rewards = rewards;
    at::Tensor discounts = config_.gamma * (1.0 - terminated);
    if (truncation_values) {
      // A truncated step ends its episode here: bootstrap from V(final observation), not o_{t+1}.
      step_rewards = rewards + config_.gamma * truncated * *truncation_values;
      discounts = discounts * (1.0 - truncated);
    }
    const VTraceResult targets =
        vtrace(rollout.log_probs.detach().to(device), eval.log_prob.detach().reshape(shape), step_rewards,
               current_values, bootstrap_value, discounts, config_.vtrace_rho_bar, config_.vtrace_c_bar);
    b_returns = targets.vs.reshape(-1);
    b_values = current_values.reshape(-1);
    b_advantages = targets.pg_advantages.reshape(-1);
  } else {
    // Bootstrapped returns: n-step (gae_lambda = 1) or GAE's, truncated episodes bootstrapping
    // from truncation_values; advantage = return - value when acting.
    const at::Tensor returns =
        config_.gae_lambda == 1.0
            ? n_step_returns(rewards, terminated, truncated, values, bootstrap_value, truncation_values, config_.gamma)
            : gae(rewards, values, terminated, truncated, bootstrap_value, truncation_values, config_.gamma,
                  config_.gae_lambda)
                  .returns;
    b_returns = returns.reshape(-1);
    b_values = values.reshape(-1);
    b_advantages = b_returns - b_values;
  }
  if (config_.norm_adv) {
    b_advantages = (b_advantages - b_advantages.mean()) / (b_advantages.std() + 1e-8);
  }

  // One gradient step on the whole batch.
  const A2cLoss loss =
      a2c_loss(eval.log_prob, b_advantages, eval.value, b_returns, eval.entropy, config_.ent_coef, config_.vf_coef);
  gradient_step(loss.loss, parameters_, *optimizer_, config_.max_grad_norm, sync_strategy());
  ++updates_;

  // Only now may the observation statistics move: the step above saw the rollout as it was acted on.
  model_->update_observation_stats(b_obs);

  return {
      {"charts/learning_rate", lr},
      {"losses/value_loss", loss.value_loss.item<double>()},
      {"losses/policy_loss", loss.policy_loss.item<double>()},
      {"losses/entropy", loss.entropy.item<double>()},
      {"losses/explained_variance", explained_variance(b_values, b_returns)},
  };
}

void A2c::save(core::Checkpoint& checkpoint) const {
  save_learner_state(checkpoint, kAlgorithm, model_, *optimizer_, updates_,
                     reward_scaler_ ? &*reward_scaler_ : nullptr);
}

void A2c::load(const core::Checkpoint& checkpoint) {
  const std::unique_ptr<torch::optim::Optimizer> scratch = make_optimizer(config_, parameters_);
  updates_ = load_learner_state(checkpoint, kAlgorithm, model_, *optimizer_, *scratch,
                                reward_scaler_ ? &*reward_scaler_ : nullptr);
}

}  // namespace concord::algos
