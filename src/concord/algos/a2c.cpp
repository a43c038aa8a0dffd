#include "concord/algos/a2c.h"

#include <c10/core/GradMode.h>
#include <torch/optim/adam.h>
#include <torch/optim/rmsprop.h>

#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "concord/algos/gae.h"
#include "concord/algos/returns.h"
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
  // V-trace bootstraps from the learner's own V(o_T), which a network with memory would read from
  // the state its re-run ends in; not built yet.
  problems.check(!vtrace || network.recurrent.empty(), "vtrace", vtrace ? "true" : "false",
                 "false with a network with memory (algo.recurrent)");
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
    : ActorCriticLearner(kAlgorithm, core::validated(config).network, device,
                         config.normalize_reward ? std::make_optional(config.gamma) : std::nullopt,
                         [config](const nn::FlatParameters& parameters) { return make_optimizer(config, parameters); }),
      config_(std::move(config)) {}

A2c::A2c(A2c& primary) : ActorCriticLearner(primary), config_(primary.config_) {}

std::unique_ptr<OnPolicyLearner> A2c::make_shared_replica() { return std::unique_ptr<OnPolicyLearner>(new A2c(*this)); }

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
  // Annealing the rate if instructed to do so.
  const double lr = set_learning_rate(config_.learning_rate, config_.anneal_lr, progress);
  // The rollout on the model's device, rewards scaled by the running std of the discounted
  // return if asked; [T, B, ...] flattened to [T * B, ...] for the network.
  const Batch b = prepare(rollout);
  // A network with memory re-runs each env's sequence from the state the rollout started with.
  const nn::ActionEvaluation eval =
      model()->recurrent() ? model()->evaluate_sequence(b.observations.unflatten(0, {num_steps, rollout.num_envs()}),
                                                        b.actions.unflatten(0, {num_steps, rollout.num_envs()}),
                                                        b.episode_starts, b.initial_state)
                           : model()->evaluate(b.observations, b.actions);

  at::Tensor b_returns;
  at::Tensor b_values;
  at::Tensor b_advantages;
  if (config_.vtrace) {
    // Off-policy correction: importance-weighted targets from the current policy and critic.
    const auto shape = b.rewards.sizes();
    const at::Tensor current_values = eval.value.detach().reshape(shape);
    at::Tensor step_rewards = b.rewards;
    at::Tensor discounts = config_.gamma * (1.0 - b.terminated);
    if (b.truncation_values) {
      // A truncated step ends its episode here: bootstrap from V(final observation), not o_{t+1}.
      step_rewards = b.rewards + config_.gamma * b.truncated * *b.truncation_values;
      discounts = discounts * (1.0 - b.truncated);
    }
    // The learner's critic bootstraps too, as IMPALA's learner does: the behaviour's V(o_T) would
    // set a critic one or more updates old beside the current one in every target and advantage.
    at::Tensor bootstrap_value = b.bootstrap_value;
    if (b.next_observations.defined()) {
      c10::NoGradGuard no_grad;
      bootstrap_value = model()->value(b.next_observations);
    }
    const VTraceResult targets =
        vtrace(b.log_probs, eval.log_prob.detach().reshape(shape), step_rewards, current_values, bootstrap_value,
               discounts, config_.vtrace_rho_bar, config_.vtrace_c_bar);
    b_returns = targets.vs.reshape(-1);
    b_values = current_values.reshape(-1);
    b_advantages = targets.pg_advantages.reshape(-1);
  } else {
    // Bootstrapped returns: n-step (gae_lambda = 1) or GAE's, truncated episodes bootstrapping
    // from truncation_values; advantage = return - value when acting.
    const at::Tensor returns = config_.gae_lambda == 1.0
                                   ? n_step_returns(b.rewards, b.terminated, b.truncated, b.values, b.bootstrap_value,
                                                    b.truncation_values, config_.gamma)
                                   : gae(b.rewards, b.values, b.terminated, b.truncated, b.bootstrap_value,
                                         b.truncation_values, config_.gamma, config_.gae_lambda)
                                         .returns;
    b_returns = returns.reshape(-1);
    b_values = b.values.reshape(-1);
    b_advantages = b_returns - b_values;
  }
  if (config_.norm_adv) {
    b_advantages = (b_advantages - b_advantages.mean()) / (b_advantages.std() + 1e-8);
  }

  // One gradient step on the whole batch.
  const A2cLoss loss =
      a2c_loss(eval.log_prob, b_advantages, eval.value, b_returns, eval.entropy, config_.ent_coef, config_.vf_coef);
  step(loss.loss, config_.max_grad_norm);
  finish_update(b.observations);

  Metrics metrics = {
      {"charts/learning_rate", lr},
      {"losses/value_loss", loss.value_loss.item<double>()},
      {"losses/policy_loss", loss.policy_loss.item<double>()},
      {"losses/entropy", loss.entropy.item<double>()},
  };
  if (const auto explained = explained_variance(b_values, b_returns)) {
    metrics["losses/explained_variance"] = *explained;
  }
  return metrics;
}

}  // namespace concord::algos
