#pragma once

#include <ATen/core/Tensor.h>
#include <torch/nn/cloneable.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>
#include <torch/optim/adam.h>

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "concord/algos/actor.h"
#include "concord/algos/off_policy_learner.h"
#include "concord/algos/replay.h"
#include "concord/core/config_fields.h"
#include "concord/nn/actor_critic.h"
#include "concord/nn/flat_parameters.h"
#include "concord/nn/soft_q_network.h"
#include "concord/nn/squashed_gaussian_actor.h"

namespace concord::algos {

// Soft Actor-Critic (Haarnoja et al., 2018) for continuous actions, with twin Q-functions, target
// smoothing and automatic entropy tuning, as CleanRL's sac_continuous_action.py runs it. The
// defaults are sac_continuous_action.py's.
struct SacConfig {
  int64_t buffer_size = 1000000;         // replay capacity, in transitions
  double gamma = 0.99;                   // discount factor
  double tau = 0.005;                    // target smoothing: target = tau * Q + (1 - tau) * target
  int64_t batch_size = 256;              // transitions per gradient step
  int64_t learning_starts = 5000;        // env steps of uniformly random actions before updates
  double policy_lr = 3e-4;               // the actor's Adam step size
  double q_lr = 1e-3;                    // the critics' (and log alpha's) Adam step size
  int64_t policy_frequency = 2;          // actor and alpha updated every policy_frequency-th
                                         // gradient step, policy_frequency times (TD3's delay)
  int64_t target_network_frequency = 1;  // gradient steps between target updates
  double alpha = 0.2;                    // entropy coefficient when not autotuned
  bool autotune = true;                  // learn alpha towards entropy -action_dim
  int64_t train_frequency = 1;           // env steps (over all envs) between updates
  int64_t gradient_steps = 1;            // gradient steps per update
  bool checkpoint_replay = false;        // save the replay buffer in checkpoints
  // gSDE exploration (Raffin et al., 2021; nn::SquashedGaussianActor) as Stable-Baselines3's SAC
  // runs it: new exploration noise every sde_sample_freq env steps while acting (-1: at the
  // start of each collection of train_frequency steps only) and before every gradient step.
  bool use_sde = false;
  double log_std_init = -3.0;    // gSDE: initial log std of the exploration matrix's elements
  int64_t sde_sample_freq = -1;  // gSDE: env steps between new exploration noise while acting
  // The networks' torso: hidden_sizes and activation of the shared algo.* keys (CleanRL's SAC:
  // 256-256 relu, set by the config presets); obs_shape, action_* and the action bounds
  // (network.action_low / action_high; both empty: [-1, 1]) come from the env's spaces. Only an
  // "mlp" torso and a continuous action space are accepted.
  nn::ActorCriticConfig network;

  // Throws std::invalid_argument: one line for a discrete action space or a network SAC cannot
  // build, else every bad hyperparameter with its value.
  void validate() const;
  // The keys algo.sac.<key>, one per field above but network and the action bounds.
  static const core::ConfigFields<SacConfig>& fields();
};

// Everything SAC learns, in one module so that one FlatParameters covers it: the policy
// "actor", the twin critics "qf1" and "qf2", and the parameter "log_alpha" [1] (log of the
// entropy coefficient; 0 at the start, alpha = 1, as CleanRL's autotune). The buffers are the
// actor's action_scale and action_bias. clone() gives a deep copy.
class SacModelImpl : public torch::nn::Cloneable<SacModelImpl> {
 public:
  SacModelImpl(nn::SquashedGaussianActorConfig actor_config, nn::SoftQNetworkConfig critic_config);
  void reset() override;

  nn::SquashedGaussianActorConfig actor_config;
  nn::SoftQNetworkConfig critic_config;
  nn::SquashedGaussianActor actor{nullptr};
  nn::SoftQNetwork qf1{nullptr};
  nn::SoftQNetwork qf2{nullptr};
  at::Tensor log_alpha;
};
TORCH_MODULE(SacModel);

// The target critics "qf1" and "qf2", which follow the critics by soft updates and never learn.
class SacTargetsImpl : public torch::nn::Cloneable<SacTargetsImpl> {
 public:
  explicit SacTargetsImpl(nn::SoftQNetworkConfig critic_config);
  void reset() override;

  nn::SoftQNetworkConfig critic_config;
  nn::SoftQNetwork qf1{nullptr};
  nn::SoftQNetwork qf2{nullptr};
};
TORCH_MODULE(SacTargets);

// SAC's Actor fragment. Before learning_starts env steps (context.global_step in
// [0, learning_starts)) it acts uniformly at random in the action space, as CleanRL does to fill
// the replay; then it samples tanh(u) * scale + bias from the policy; deterministic acting (and
// only it) takes tanh(mean) * scale + bias. No extras. Actions are float [B, d] on the network's
// device, always within the bounds.
//
// With a gSDE policy it draws new exploration noise (one matrix per env) at the first step of each
// collection of train_frequency env steps (context.global_step enters a new one: the updates
// between collections draw their own noise) and, with sde_sample_freq > 0, every sde_sample_freq
// env steps into it, and holds it in between, so that actions follow a smooth function of the state.
class SacActor : public Actor {
 public:
  SacActor(nn::SquashedGaussianActor policy, int64_t learning_starts, int64_t train_frequency = 1,
           int64_t sde_sample_freq = -1);
  ActorOutput act(const ActorInput& input, const ActingContext& context) override;

 private:
  nn::SquashedGaussianActor policy_;
  int64_t learning_starts_;
  int64_t train_frequency_;
  int64_t sde_sample_freq_;
  std::pair<int64_t, int64_t> noise_drawn_for_{-1, -1};  // (collection, period in it) of the noise held
};

// The SAC Learner. Each update (every train_frequency env steps, once the replay holds a batch),
// for each of gradient_steps gradient steps, as in CleanRL:
//
//   (s, a, r, d, s') ~ replay                                         uniform, batch_size
//   a' ~ pi(s'),  y = r + gamma * (1 - d) * (min_i Q_target_i(s', a') - alpha * log pi(a'|s'))
//   L_Q = mse(Q1(s, a), y) + mse(Q2(s, a), y)                          -> the critics' Adam
//   every policy_frequency-th gradient step, policy_frequency times:
//     a~ ~ pi(s)   (reparameterised)
//     L_pi = mean(alpha * log pi(a~|s) - min_i Q_i(s, a~))              -> the actor's Adam
//     if autotune:
//       a~ ~ pi(s)  (the updated actor, no gradient)
//       L_alpha = mean(-exp(log_alpha) * (log pi(a~|s) + target_entropy)) -> log alpha's Adam
//       alpha = exp(log_alpha)
//   every target_network_frequency-th gradient step:
//     Q_target_i = tau * Q_i + (1 - tau) * Q_target_i
//
// d is `terminated` only: a truncated episode bootstraps from its final observation, which the
// policy hands over as next_observations. target_entropy = -action_dim. With gSDE, each gradient
// step first draws new exploration noise (one matrix for the batch), which its samples share.
//
// All parameters (actor, critics, log_alpha) live in one flat buffer (flat_parameters()); three
// Adam optimisers (eps 1e-8, as PyTorch's) step their own parameters in it. Each loss goes through
// gradient_step.h without clipping: the flat gradient is zeroed, the loss back-propagated (the
// actor's loss reaches the critics' gradient too; their optimiser does not step then), the
// sync strategy applied, and only that loss's optimiser steps. The targets are one flat buffer
// of their own, soft-updated in one operation.
//
// Metrics (CleanRL's names), of the last gradient step: losses/qf1_loss, losses/qf2_loss,
// losses/qf_values (the mean of Q1(s, a) and Q2(s, a) over the batch), losses/alpha (the
// coefficient after the step); and, once the actor has been updated, losses/actor_loss and (with
// autotune) losses/alpha_loss of its latest update.
//
// Replay sampling uses the replay's own core::Rng (replay.h), seeded at construction from LibTorch's
// generator (seed it with torch::manual_seed); policy noise and random acting use
// core::thread_generator. The replay lives on the CPU; batches move to the model's device.
class Sac : public OffPolicyLearner {
 public:
  // Validates the config, builds the networks on `device`, copies the critics into the targets
  // and allocates the replay. Throws std::invalid_argument.
  explicit Sac(SacConfig config, torch::Device device = torch::kCPU);

  Actor& actor() override { return *actor_; }
  torch::nn::Module& network() override { return *model_; }
  nn::FlatParameters& flat_parameters() override { return parameters_; }

  // The replay (replay.h) adds the step's one-step transitions: observations, actions, rewards,
  // terminated and next_observations are needed (truncated is not). Throws
  // std::invalid_argument for a missing or mis-shaped field.
  void observe(const TensorMap& step, int stream = 0) override;
  // Throws std::invalid_argument if progress is outside [0, 1].
  Metrics update(int64_t global_step, double progress) override;
  int64_t learning_starts() const override { return config_.learning_starts; }
  int64_t train_frequency() const override { return config_.train_frequency; }
  // A SacActor (same learning_starts) over a clone of the policy network alone: assign() takes
  // the whole flat buffer and copies the policy's slice of it.
  std::unique_ptr<ActorReplica> make_actor_replica() override;
  // True: observe() only adds to the replay, whose buffer is thread-safe and built at
  // construction.
  bool observes_while_updating() const override { return true; }

  // Tensors "model/<name>" (parameters, log_alpha and the action scale and bias),
  // "target/<name>" (the target critics), "optimizer/actor", "optimizer/q", "optimizer/alpha"
  // (LibTorch's archive bytes in uint8 tensors), "replay_rng" (the sampler's state as text bytes)
  // and, with checkpoint_replay, "replay/<name>" (Replay::save); metadata "algorithm"
  // = "sac", "updates", "gradient_steps".
  void save(core::Checkpoint& checkpoint) const override;
  // Checks everything before changing anything; throws core::CheckpointError naming another
  // algorithm's checkpoint, a missing, unexpected or mis-shaped tensor, other action bounds,
  // unreadable optimiser or sampler state, or a replay that does not fit. A checkpoint without
  // "replay/..." leaves the replay as it is.
  void load(const core::Checkpoint& checkpoint) override;

  // The soft Bellman target of a batch of replay fields, without gradient (one draw of
  // a' ~ pi(s')):
  //   y = G + discount * (min(Q1_target, Q2_target)(s', a') - alpha * log pi(a'|s'))
  // with G = r and discount = gamma * (1 - terminated) for SAC's one-step transitions: returns and
  // discounts [B], bootstrap_observations s' [B, ...]; returns [B] on the model's device.
  at::Tensor soft_q_target(const at::Tensor& returns, const at::Tensor& discounts,
                           const at::Tensor& bootstrap_observations);

  // The entropy coefficient in use: exp(log_alpha) with autotune, else config().alpha.
  double alpha() const;
  double target_entropy() const { return target_entropy_; }

  const SacConfig& config() const { return config_; }
  SacModel model() const { return model_; }
  SacTargets targets() const { return targets_; }
  const ReplayBuffer& replay() const { return *replay_.buffer(); }
  // update() calls that updated (not those that returned no metrics), and gradient steps taken.
  int64_t updates() const { return updates_; }
  int64_t gradient_steps_done() const { return gradient_steps_; }

 private:
  // One optimiser step on `loss` for `optimizer`'s parameters (gradient_step.h, no clipping).
  void step(const at::Tensor& loss, torch::optim::Optimizer& optimizer);
  // The detached coefficient as a tensor on the model's device (no host round trip).
  at::Tensor alpha_tensor() const;
  // The three optimisers over the parameters of `model` (ours, or scratch ones for load()).
  struct Optimizers {
    std::unique_ptr<torch::optim::Adam> actor, q, alpha;
  };
  Optimizers make_optimizers() const;

  SacConfig config_;
  torch::Device device_;
  SacModel model_;
  nn::FlatParameters parameters_;
  SacTargets targets_;
  nn::FlatParameters target_parameters_;
  at::Tensor critic_values_;  // the slice of parameters_.values() that holds qf1 then qf2
  Optimizers optimizers_;
  Replay replay_;
  std::unique_ptr<SacActor> actor_;
  double target_entropy_;
  int64_t updates_ = 0;
  int64_t gradient_steps_ = 0;
  // The latest actor update's losses (undefined before the first one).
  at::Tensor last_actor_loss_;
  at::Tensor last_alpha_loss_;
};

}  // namespace concord::algos
