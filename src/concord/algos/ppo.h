#pragma once

#include <ATen/core/Tensor.h>
#include <torch/optim/adam.h>

#include <cstdint>
#include <optional>

#include "concord/algos/actor_critic_learner.h"
#include "concord/core/config_fields.h"
#include "concord/nn/actor_critic.h"
#include "concord/nn/flat_parameters.h"

namespace concord::algos {

// Proximal Policy Optimisation (Schulman et al., 2017) with the clipped surrogate objective, as
// CleanRL's ppo.py runs it. The defaults are ppo.py's (tuned for CartPole-v1 and classic control).
struct PpoConfig {
  double learning_rate = 2.5e-4;  // Adam step size at progress 0
  int64_t num_steps = 128;        // T: steps of each environment per rollout (per update)
  bool anneal_lr = true;          // learning rate decays linearly: (1 - progress) * learning_rate
  double gamma = 0.99;            // discount factor
  double gae_lambda = 0.95;       // GAE lambda
  int64_t num_minibatches = 4;    // minibatches per epoch, of T * B / num_minibatches samples
  int64_t update_epochs = 4;      // passes over the rollout per update
  bool norm_adv = true;           // normalise advantages within each minibatch
  double clip_coef = 0.2;         // surrogate clipping epsilon (and value clipping range)
  bool anneal_clip = false;       // clip_coef decays linearly: (1 - progress) * clip_coef, as
                                  // Stable-Baselines3's "lin_" clip_range schedule (RL Zoo)
  bool clip_vloss = true;         // clip the value loss around the rollout's values
  double ent_coef = 0.01;         // entropy bonus coefficient (the initial one when annealed)
  bool anneal_ent = false;        // ent_coef decays linearly: (1 - progress) * ent_coef, so that
                                  // the policy explores early and acts near its mode at the end
  double vf_coef = 0.5;           // value loss coefficient
  double max_grad_norm = 0.5;     // global gradient-norm clipping threshold
  double target_kl = 0.0;         // stop the epochs early once approx_kl exceeds this; 0 = off
  double adam_eps = 1e-5;         // Adam epsilon
  bool normalize_reward = false;  // scale rewards by the running std of the discounted return
                                  // (RewardScaler, Gymnasium's NormalizeReward)
  bool decoupled = false;         // decoupled objective (Hilton et al. 2021): clip against the
                                  // policy the update starts from, and weight each sample by its
                                  // ratio to the behaviour policy; for rollouts acted by older
                                  // parameters (async_learner, central_inference with a lag)
  nn::ActorCriticConfig network;  // the actor-critic: CleanRL's separate 64-64 tanh MLPs by
                                  // default; obs_shape and action_* come from the env's spaces;
                                  // network.normalize_observations normalises its inputs

  // Throws std::invalid_argument listing every bad hyperparameter with its value (the network is
  // validated by ActorCritic's constructor).
  void validate() const;
  // The keys algo.ppo.<key>, one per field above but `network` (whose keys are algo.<key>, see
  // ActorCriticConfig::fields).
  static const core::ConfigFields<PpoConfig>& fields();
};

// The terms of PPO's loss on one minibatch. `loss` carries the graph; the others are detached.
struct PpoLoss {
  at::Tensor loss;           // policy_loss - ent_coef * entropy + vf_coef * value_loss
  at::Tensor policy_loss;    // mean(max(-A * ratio, -A * clip(ratio, 1 - eps, 1 + eps)))
  at::Tensor value_loss;     // 0.5 * mean of the (clipped) squared value error
  at::Tensor entropy;        // mean entropy
  at::Tensor approx_kl;      // mean((ratio - 1) - log ratio), the k3 estimator of KL(old || new)
  at::Tensor old_approx_kl;  // mean(-log ratio), the k1 estimator
  at::Tensor clipfrac;       // fraction of samples with |ratio - 1| > clip_coef
};

// Throws std::invalid_argument, naming `fn` and the argument, unless every argument of a PPO
// loss is a 1-D tensor of the same length N.
void check_ppo_loss_inputs(const char* fn, const at::Tensor& new_log_probs, const at::Tensor& old_log_probs,
                           const at::Tensor& advantages, const at::Tensor& new_values, const at::Tensor& old_values,
                           const at::Tensor& returns, const at::Tensor& entropy);

// PPO's loss, as in CleanRL's ppo.py, on one minibatch of N samples; every argument is [N].
// `advantages` are used as given (normalise them before, if wanted). With clip_vloss the value
// error is max((v - R)^2, (old_v + clip(v - old_v, -eps, eps) - R)^2), else (v - R)^2.
PpoLoss ppo_loss(const at::Tensor& new_log_probs, const at::Tensor& old_log_probs, const at::Tensor& advantages,
                 const at::Tensor& new_values, const at::Tensor& old_values, const at::Tensor& returns,
                 const at::Tensor& entropy, double clip_coef, bool clip_vloss, double ent_coef, double vf_coef);

// The PPO Learner: owns an ActorCritic and its Adam optimiser.
//
//   update(rollout [T = num_steps, B], progress):
//     lr = (1 - progress) * learning_rate              (if anneal_lr)
//     eps = (1 - progress) * clip_coef                 (if anneal_clip, else clip_coef)
//     c_ent = (1 - progress) * ent_coef                (if anneal_ent, else ent_coef)
//     rewards = reward_scaler.scale(rollout.rewards)   (if normalize_reward)
//     advantages, returns = gae(rollout, rewards)      (truncations bootstrap from this
//                                                       critic's V(final_observations) when given)
//     flatten [T, B] -> [T * B]
//     for epoch in update_epochs:
//       for minibatch in shuffle(T * B) split into num_minibatches (sizes differ by at most 1):
//         ppo_loss -> backward -> clip grad norm -> Adam step
//       stop early if target_kl > 0 and approx_kl > target_kl
//     model.update_observation_stats(rollout.observations)   (a no-op unless it normalises them)
//
// The observation statistics change only at the end, so the epochs evaluate the rollout with the
// statistics it was collected with: the first minibatch's ratio is exactly 1.
//
// Metrics (CleanRL's names): losses/value_loss, losses/policy_loss, losses/entropy,
// losses/approx_kl and losses/old_approx_kl are those of the last minibatch run, as CleanRL logs
// them; losses/clipfrac is the mean over all minibatches run; losses/explained_variance is
// 1 - Var(returns - values) / Var(returns) of the rollout's values (left out when Var(returns) = 0);
// charts/learning_rate is the rate used. Concord adds charts/clip_coef, the eps used,
// charts/ent_coef, the entropy coefficient used, and charts/update_epochs, the epochs run (fewer
// than update_epochs after an early stop).
//
// Minibatches are drawn with LibTorch's global generator (seed it with torch::manual_seed).
// Rollout tensors may live on any device; they are moved to the model's. Not thread-safe.
class Ppo : public ActorCriticLearner {
 public:
  // Validates the config and builds the network on `device` and the optimiser (over the network's
  // flat parameter buffer, see nn/flat_parameters.h). Throws std::invalid_argument.
  explicit Ppo(PpoConfig config, torch::Device device = torch::kCPU);

  // Throws std::invalid_argument if the rollout's T is not num_steps, if T * B cannot fill
  // num_minibatches minibatches (of at least 2 samples when norm_adv), or if progress is outside
  // [0, 1].
  Metrics update(const Rollout& rollout, double progress) override;
  int64_t rollout_length() const override { return config_.num_steps; }
  int64_t gradient_steps_per_update() const override {
    return config_.target_kl > 0.0 ? 0 : config_.update_epochs * config_.num_minibatches;
  }
  // The clipped ratio pi / pi_behaviour is computed against the rollout's own log-probabilities.
  bool corrects_policy_lag() const override { return true; }
  std::unique_ptr<OnPolicyLearner> make_shared_replica() override;

  const PpoConfig& config() const { return config_; }

 private:
  // A replica sharing primary's parameters and Adam moments (see make_shared_replica).
  explicit Ppo(Ppo& primary);

  PpoConfig config_;
};

}  // namespace concord::algos
