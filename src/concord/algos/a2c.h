#pragma once

#include <ATen/core/Tensor.h>
#include <torch/optim/optimizer.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "concord/algos/actor_critic_learner.h"
#include "concord/core/config_fields.h"
#include "concord/nn/actor_critic.h"
#include "concord/nn/flat_parameters.h"

namespace concord::algos {

// Synchronous advantage actor-critic: A3C's loss (Mnih et al., 2016) on batches of parallel
// environments as PAAC (Clemente et al., 2017) runs it. The defaults are Stable-Baselines3's
// A2C with PAAC's entropy coefficient.
struct A2cConfig {
  double learning_rate = 7e-4;        // optimiser step size at progress 0
  int64_t num_steps = 5;              // T: steps of each environment per rollout (per update)
  bool anneal_lr = false;             // learning rate decays linearly: (1 - progress) * lr
  double gamma = 0.99;                // discount factor
  double gae_lambda = 1.0;            // 1: plain n-step returns (n_step_returns); < 1: GAE
  std::string optimizer = "rmsprop";  // "rmsprop" or "adam"
  double rmsprop_alpha = 0.99;        // RMSprop smoothing constant
  double optimizer_eps = 1e-5;        // RMSprop / Adam epsilon
  bool norm_adv = false;              // normalise advantages over the batch
  double ent_coef = 0.01;             // entropy bonus coefficient (PAAC / A3C's beta)
  double vf_coef = 0.5;               // value loss coefficient
  double max_grad_norm = 0.5;         // global gradient-norm clipping threshold
  bool vtrace = false;                // V-trace targets and advantages (IMPALA), for policy lag
  double vtrace_rho_bar = 1.0;        // V-trace: clip of the importance ratio in delta and the
                                      //   policy gradient
  double vtrace_c_bar = 1.0;          // V-trace: clip of the trace-cutting ratio c
  bool normalize_reward = false;      // scale rewards by the running std of the discounted
                                      // return (RewardScaler, Gymnasium's NormalizeReward)
  nn::ActorCriticConfig network;      // the actor-critic: separate 64-64 tanh MLPs by default;
                                      // obs_shape and action_* come from the env's spaces;
                                      // network.normalize_observations normalises its inputs

  // Throws std::invalid_argument listing every bad hyperparameter with its value (the network is
  // validated by ActorCritic's constructor).
  void validate() const;
  // The keys algo.a2c.<key>, one per field above but `network` (whose keys are algo.<key>, see
  // ActorCriticConfig::fields).
  static const core::ConfigFields<A2cConfig>& fields();
};

// The terms of A2C's loss. `loss` carries the graph; the others are detached.
struct A2cLoss {
  at::Tensor loss;         // policy_loss + vf_coef * value_loss - ent_coef * entropy
  at::Tensor policy_loss;  // -mean(A * log pi(a | s)), A treated as a constant
  at::Tensor value_loss;   // mean((R - V(s))^2)
  at::Tensor entropy;      // mean entropy
};

// A2C's loss on a batch of N samples; every argument is [N]. `advantages` are used as given
// (and detached).
A2cLoss a2c_loss(const at::Tensor& log_probs, const at::Tensor& advantages, const at::Tensor& values,
                 const at::Tensor& returns, const at::Tensor& entropy, double ent_coef, double vf_coef);

// The A2C Learner: owns an ActorCritic and its RMSprop (or Adam) optimiser.
//
//   update(rollout [T = num_steps, B], progress):
//     lr = (1 - progress) * learning_rate                (if anneal_lr)
//     rewards = reward_scaler.scale(rollout.rewards)     (if normalize_reward)
//     returns = n_step_returns(rollout, rewards)         (gae_lambda = 1; else GAE's returns)
//     advantages = returns - rollout.values
//       or, with vtrace (for rollouts acted by older parameters, e.g. central_inference):
//     returns, advantages = vtrace(rollout.log_probs, log pi_current, V_current, ...)
//     one gradient step on a2c_loss over all T * B samples, gradient norm clipped
//     model.update_observation_stats(rollout.observations)   (a no-op unless it normalises them)
//
// V-trace (Espeholt et al., 2018, see vtrace.h) corrects for the lag between the behaviour
// policy that chose the rollout's actions (rollout.log_probs) and the current one: values and
// the bootstrap value V(o_T) are the current critic's (when the rollout carries o_T), and a
// truncated step bootstraps by folding gamma * V(final observation) into its reward. On an
// on-policy rollout (rollout.log_probs and values from the current model, rho_bar, c_bar >= 1)
// it gives exactly the n-step returns and advantages. It needs gae_lambda = 1.
//
// Truncated episodes bootstrap from V(final observation), this learner's critic evaluating the
// rollout's final_observations, when the rollout has them (else from 0, as CleanRL). Metrics:
// losses/value_loss, losses/policy_loss, losses/entropy, losses/explained_variance (as PPO's)
// and charts/learning_rate. Rollout tensors may live on any device; they are moved to the
// model's. Not thread-safe.
class A2c : public ActorCriticLearner {
 public:
  // Validates the config and builds the network on `device` and the optimiser (over the network's
  // flat parameter buffer, see nn/flat_parameters.h). Throws std::invalid_argument.
  explicit A2c(A2cConfig config, torch::Device device = torch::kCPU);

  // Throws std::invalid_argument if the rollout's T is not num_steps, if norm_adv and
  // T * B < 2, or if progress is outside [0, 1].
  Metrics update(const Rollout& rollout, double progress) override;
  int64_t rollout_length() const override { return config_.num_steps; }
  int64_t gradient_steps_per_update() const override { return 1; }
  // Only V-trace's truncated importance weights correct targets for a lagging behaviour policy.
  bool corrects_policy_lag() const override { return config_.vtrace; }
  std::unique_ptr<OnPolicyLearner> make_shared_replica() override;

  const A2cConfig& config() const { return config_; }

 private:
  // A replica sharing primary's parameters and optimiser statistics (see make_shared_replica).
  explicit A2c(A2c& primary);

  A2cConfig config_;
};

}  // namespace concord::algos
