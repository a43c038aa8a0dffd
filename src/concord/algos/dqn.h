#pragma once

#include <ATen/core/Tensor.h>
#include <torch/optim/optimizer.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "concord/algos/actor.h"
#include "concord/algos/off_policy_learner.h"
#include "concord/algos/replay.h"
#include "concord/algos/sequence_replay.h"
#include "concord/core/config_fields.h"
#include "concord/nn/actor_critic.h"
#include "concord/nn/flat_parameters.h"
#include "concord/nn/q_network.h"

namespace concord::algos {

// Deep Q-Networks (Mnih et al., 2015) as CleanRL's dqn.py runs it, with switches for the published
// extensions: Double DQN (van Hasselt et al., 2016), dueling networks (Wang et al., 2016), n-step
// returns, proportional prioritised replay (Schaul et al., 2016), MinAtar's settings (Young & Tian,
// 2019: centered RMSprop, Huber loss, random acting until learning starts) and Ape-X's initial
// priorities (Horgan et al., 2018; its per-actor epsilons are the policy's, policy.apex). The defaults are dqn.py's
// (CartPole-v1).
//
// Steps are environment steps summed over every env (off_policy_learner.h), as global_step is.
struct DqnConfig {
  double learning_rate = 2.5e-4;             // optimiser step size (constant)
  int64_t buffer_size = 10000;               // replay capacity, in transitions
  double gamma = 0.99;                       // discount factor
  double tau = 1.0;                          // target update: target = tau * online + (1 - tau) * target
  int64_t target_network_frequency = 500;    // steps between target updates
  int64_t batch_size = 128;                  // transitions per gradient step
  double start_e = 1.0;                      // epsilon at the start of the decay
  double end_e = 0.05;                       // epsilon after the decay (and when acting after training)
  double exploration_fraction = 0.5;         // decay length as a fraction of the run's total steps
  int64_t exploration_steps = 0;             // decay length in steps; 0 = exploration_fraction * total
  bool decay_after_learning_starts = false;  // MinAtar: uniformly random acting until
                                             // learning_starts, the decay from there; false =
                                             // CleanRL's linear_schedule from step 0
  int64_t learning_starts = 10000;           // steps before the first update
  int64_t train_frequency = 10;              // steps between updates
  int64_t gradient_steps = 1;                // gradient steps per update
  std::string optimizer = "adam";            // "adam" or "rmsprop"
  double adam_eps = 1e-8;                    // Adam epsilon (PyTorch's default, as dqn.py)
  double rmsprop_alpha = 0.95;               // RMSprop: squared-gradient smoothing (MinAtar's)
  double rmsprop_eps = 0.01;                 // RMSprop: epsilon ("min squared gradient", MinAtar's)
  bool rmsprop_centered = true;              // RMSprop: centered (MinAtar's)
  double rmsprop_momentum = 0.0;             // RMSprop: heavy-ball momentum
  std::string loss = "mse";                  // "mse" (dqn.py) or "huber" (smooth L1, MinAtar's dqn.py)
  double max_grad_norm = 0.0;                // global gradient-norm clipping; 0 = none
  bool double_dqn = false;                   // the online network picks a*, the target evaluates it
  bool dueling = false;                      // dueling network: Q = V + A - mean A
  int64_t n_step = 1;                        // n of the n-step return
  bool prioritized = false;                  // proportional prioritised replay
  double priority_alpha = 0.6;               // prioritised: priority exponent
  double priority_beta0 = 0.4;               // prioritised: importance exponent at progress 0 (-> 1 at 1)
  double priority_eps = 1e-6;                // prioritised: priority = |td error| + priority_eps
  bool checkpoint_replay = false;            // checkpoints hold the replay (and load() restores it)
  // With memory (network.recurrent), R2D2 (Kapturowski et al., 2019): replay holds sequences.
  int64_t sequence_length = 40;   // steps learned from per stored sequence (R2D2's 40 of 80)
  int64_t burn_in = 40;           // steps re-run before them to warm the state, not learned from
  double priority_eta = 0.9;      // a sequence's priority: eta max |td| + (1 - eta) mean |td|
  bool value_rescaling = false;   // R2D2's h(x): the network learns h(Q) (value_rescale below)
  nn::ActorCriticConfig network;  // the torso keys algo.<key>; obs_shape and action_dim come
                                  // from the env's spaces (dqn.py's MLP: hidden_sizes
                                  // [120, 84], activation relu)

  // Throws std::invalid_argument listing every bad hyperparameter with its value (the network is
  // validated by QNetwork's constructor).
  void validate() const;
  // The keys algo.dqn.<key>, one per field above but `network`.
  static const core::ConfigFields<DqnConfig>& fields();
};

// Epsilon of the epsilon-greedy behaviour policy for whoever acts, by the first rule that applies:
//   context.deterministic            0 (greedy)
//   context.global_step < 0          end_e (acting after training)
//   context.epsilon >= 0             that epsilon, which the policy assigns (Ape-X's per actor)
//   decay_after_learning_starts      MinAtar: 1 while t < learning_starts, then linear from start_e
//                                    to end_e over D steps counted from learning_starts, end_e after
//   otherwise                        CleanRL's linear_schedule: max(start_e + (end_e - start_e) t / D,
//                                    end_e)
// with t = context.global_step and D = exploration_steps, or exploration_fraction *
// context.total_steps when exploration_steps is 0 (D <= 0: end_e at once).
double dqn_epsilon(const DqnConfig& config, const ActingContext& context);

// R2D2's value rescaling (Kapturowski et al. 2019, after Pohlen et al. 2018), elementwise:
//   h(x)      = sign(x) (sqrt(|x| + 1) - 1) + eps x
//   h^-1(x)   = sign(x) (((sqrt(1 + 4 eps (|x| + 1 + eps)) - 1) / (2 eps))^2 - 1)
// with the paper's eps = 1e-3 (kValueRescalingEps). h squashes a return of 100 to about 9.1, so a
// network whose recurrent core's outputs lie in [-1, 1] reaches CartPole's values with small weights.
inline constexpr double kValueRescalingEps = 1e-3;
at::Tensor value_rescale(const at::Tensor& x, double eps = kValueRescalingEps);
at::Tensor value_unrescale(const at::Tensor& x, double eps = kValueRescalingEps);

// The Actor of DQN: per row, with probability epsilon (dqn_epsilon) a uniformly random action,
// else argmax_a Q(o, a) (the first maximal action on ties). Actions are int64 [B] on the network's
// device; no extras. At epsilon 1 the network is not run, unless it has memory: a recurrent
// network runs at every step, from the state the policy hands back (ActorInput::state, reset
// where episodes start), and returns the state after it. Random numbers come from LibTorch's
// generator of the calling thread (core::thread_generator). The network is the learner's (a
// ModuleHolder), so this acts with its current parameters.
class EpsilonGreedyActor : public Actor {
 public:
  EpsilonGreedyActor(nn::QNetwork network, DqnConfig config);
  ActorOutput act(const ActorInput& input, const ActingContext& context) override;
  // "charts/epsilon": dqn_epsilon at `context`.
  Metrics exploration(const ActingContext& context) const override;

 private:
  nn::QNetwork network_;
  DqnConfig config_;
};

// The DQN Learner: an online Q-network (the one that learns, acts and is flat_parameters()), a
// target network that follows it, the optimiser, and its replay (replay.h: the n-step adder,
// Ape-X's initial priorities, the buffer and the sampler).
//
//   observe(step, stream):  the replay adds the n-step transitions the step completes
//
//   update(global_step, progress):                   (nothing while replay < batch_size)
//     repeat gradient_steps times:
//       (o, a, G, discount, o') ~ replay             (prioritised: P(i) ~ p_i^alpha, weights w_i
//                                                     with beta = beta0 + (1 - beta0) progress)
//       a* = argmax_a Q_target(o', a)                (Double DQN: argmax_a Q_online(o', a))
//       y  = G + discount * Q_target(o', a*)         no gradient
//       loss = mean_i w_i * l(Q_online(o, a)_i - y_i)  l = square (mse) or smooth L1 (huber); w = 1
//                                                     unless prioritised
//       gradient_step(loss)                          gradient_step.h: the sync strategy, clipping
//       p_i = |Q_online(o, a)_i - y_i| + priority_eps  (prioritised; the TD errors before the step)
//     if global_step reached a multiple k * target_network_frequency not yet synced:
//       target = tau * online + (1 - tau) * target   (tau = 1: a copy)
//
// With memory (network.recurrent = "lstm" or "gru"), R2D2 (Kapturowski et al., 2019): observe()
// cuts each env's episodes into sequences of burn_in + sequence_length + n_step - 1 steps with the
// actor's state at their start (sequence_replay.h), and each gradient step learns from
// batch_size whole sequences:
//
//     s = stored state;  unroll Q_online over the burn-in from s, without gradient -> s'
//     Q_online(o_t, .) for the rest from s', Q_target(o_t, .) for all of it from s (no gradient)
//     for the learned steps t (after the burn-in), n-step double Q within the sequence:
//       y_t = sum_{i<m} gamma^i r_{t+i} + [not terminated] gamma^m Q_target(o_{t+m}, argmax_a Q_online(o_{t+m}, a))
//       m = n_step, or fewer where the episode ends first (its final observation is o_{t+m})
//     loss = sum over sequences w_j * mean over their learned steps l(Q_online(o_t, a_t) - y_t) / B
//     p_j = eta max_t |delta_t| + (1 - eta) mean_t |delta_t| + priority_eps   (prioritised)
//
// double_dqn is implied (R2D2's). With value_rescaling (R2D2's), the network's outputs are h(Q)
// (value_rescale) and the target is rescaled about its bootstrap:
//       y_t = h(sum_{i<m} gamma^i r_{t+i} + [not terminated] gamma^m h^-1(Q_target(o_{t+m}, a*)))
// (argmax is unchanged by h, so acting is too; losses/q_values is then the mean h(Q)). The sequence
// replay is not saved in checkpoints (checkpoint_replay is refused); a resumed run refills it.
//
// The target starts as a copy of the online network, and the multiples up to learning_starts count
// as synced by it, so that (as in dqn.py, which updates the target only once learning has started)
// the first target update comes at the first multiple after learning_starts; a multiple passed
// between two updates is caught up at the next one, once.
//
// Metrics: losses/td_loss and losses/q_values (the mean Q_online(o, a) of the replayed actions) of
// the last gradient step, charts/learning_rate, and charts/beta when prioritised. charts/epsilon is
// the actor's (EpsilonGreedyActor::exploration), which the policy reports: under Ape-X each actor
// has its own.
//
// Observations go into the replay in the env's dtype (uint8 grids stay uint8): its buffer is
// built at the first observe(), which fixes the dtype. It lives on the CPU; sampled batches move
// to the network's device. Replay sampling draws from a core::Rng seeded from LibTorch's generator
// at construction (seed it with torch::manual_seed). Not thread-safe, except actor().act() beside
// update() where the policy allows it, and observe() beside update() (observes_while_updating).
class Dqn : public OffPolicyLearner {
 public:
  // Validates the config and builds both networks on `device`, the optimiser over the online
  // network's flat parameters, and the actor. Throws std::invalid_argument, in one line for a
  // continuous action space.
  explicit Dqn(DqnConfig config, torch::Device device = torch::kCPU);

  Actor& actor() override { return actor_; }
  torch::nn::Module& network() override { return *online_; }
  nn::FlatParameters& flat_parameters() override { return parameters_; }

  // Replay::add: throws std::invalid_argument for a missing field, rows that disagree,
  // non-integer or out-of-range actions, or a batch size that differs from the stream's earlier
  // steps.
  void observe(const TensorMap& step, int stream = 0) override;
  // Throws std::invalid_argument if global_step < 0 or progress is outside [0, 1].
  Metrics update(int64_t global_step, double progress) override;
  int64_t learning_starts() const override { return config_.learning_starts; }
  int64_t train_frequency() const override { return config_.train_frequency; }
  // An EpsilonGreedyActor (same config, so the same epsilons) over a clone of the online network.
  std::unique_ptr<ActorReplica> make_actor_replica() override;
  // A3C's asynchronous Q-learning (Mnih et al., 2016, Algorithm 1; Algorithm 2's n-step returns
  // with n_step > 1), for hogwild: a replica whose online and target networks and optimiser
  // statistics are this learner's, with its own gradients and no replay. Its observe() queues its
  // thread's transitions; its update() takes one gradient step on exactly those queued since the
  // last, each once (the thread's accumulated gradients, as a mean), then the shared target
  // follows at multiples of target_network_frequency of global_step. Its actor anneals epsilon
  // from start_e to a final epsilon drawn once per replica: 0.1, 0.01 or 0.5 with probabilities
  // 0.4, 0.3 and 0.3 (A3C's). learning_starts does not apply: there is no replay to fill. Throws
  // std::invalid_argument, in one line, with prioritized replay.
  std::unique_ptr<OffPolicyLearner> make_shared_replica() override;
  // True: observe() writes the replay's n-step windows (which update() never reads) and its
  // buffer, which is thread-safe; the buffer built by the first observe() is what needs the
  // contract's happens-before.
  bool observes_while_updating() const override { return true; }
  bool acts_with_memory() const override { return sequences_ != nullptr; }

  // Tensors "model/<name>" (online) and "target/<name>", "optimizer" (LibTorch's archive bytes in a
  // uint8 tensor), the sampler as "replay_rng" and, with checkpoint_replay, the replay's contents
  // as "replay/<name>" (Replay::save); metadata
  // "algorithm" = "dqn", "updates" and "target_sync_step". The n-step windows are not saved: they
  // belong to episodes that a resumed run does not continue (its envs start afresh).
  //
  // Without checkpoint_replay a resumed run starts with an empty replay: it refills as it acts
  // (with the resumed epsilon, not the random acting of the first learning_starts steps), and
  // update() does nothing until one batch is in it.
  void save(core::Checkpoint& checkpoint) const override;
  // Restores the networks, the optimiser, the counters and, with checkpoint_replay, the replay if
  // the checkpoint holds one; otherwise the replay is emptied. The n-step windows are emptied.
  // Checks everything first: throws core::CheckpointError naming a missing, unexpected or
  // mis-shaped tensor, another algorithm's checkpoint, an unreadable optimiser state or replay,
  // leaving the learner unchanged.
  void load(const core::Checkpoint& checkpoint) override;

  // y = G + discount * Q_target(o', a*) for a batch of replay fields (replay_field; any device),
  // without gradient: [N] on the network's device, an inference tensor (computed under
  // InferenceMode: read it freely, but clone it before saving it for backward).
  at::Tensor td_targets(const TensorMap& batch);

  const DqnConfig& config() const { return config_; }
  nn::QNetwork online_network() const { return online_; }
  nn::QNetwork target_network() const { return target_; }
  const torch::optim::Optimizer& optimizer() const { return *optimizer_; }
  // The optimiser update() steps, for a caller that times update()'s phases apart (bench/micro).
  torch::optim::Optimizer& optimizer() { return *optimizer_; }
  // nullptr until the first observe() (or a load() that restored a replay).
  const ReplayBuffer* replay() const { return replay_.buffer(); }
  // Updates that changed something (each of gradient_steps gradient steps), restored by load().
  int64_t updates() const { return updates_; }
  // The multiple of target_network_frequency the target last followed the online network at.
  int64_t target_sync_step() const { return target_sync_step_; }

 private:
  // A shared replica of `primary` acting with `final_epsilon` (make_shared_replica).
  Dqn(Dqn& primary, double final_epsilon);
  // update() with memory: gradient steps on sequences (R2D2).
  Metrics update_sequences(int64_t global_step, double progress);
  // A shared replica's update(): one gradient step on the queued transitions.
  Metrics update_shared(int64_t global_step);
  // The target follows the online network at every multiple of target_network_frequency.
  void follow_target(int64_t global_step);

  DqnConfig config_;
  torch::Device device_;
  nn::QNetwork online_;
  nn::FlatParameters parameters_;
  nn::QNetwork target_;
  nn::FlatParameters target_parameters_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  EpsilonGreedyActor actor_;
  Replay replay_;                              // its generator also draws a shared replica's A3C epsilon
  std::unique_ptr<SequenceReplay> sequences_;  // with memory only: R2D2's replay, in place of replay_
  int64_t updates_ = 0;
  int64_t target_sync_step_ = 0;
  Dqn* primary_ = nullptr;   // a shared replica's: whose parameters, target and counters it shares
  std::mutex shared_mutex_;  // on the primary: its replicas' target updates and update count
};

}  // namespace concord::algos
