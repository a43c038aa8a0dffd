#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <torch/nn/cloneable.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include "concord/core/config_fields.h"
#include "concord/core/tensor_map.h"
#include "concord/nn/categorical.h"
#include "concord/nn/cnn.h"
#include "concord/nn/diag_gaussian.h"
#include "concord/nn/grid_cnn.h"
#include "concord/nn/mlp.h"
#include "concord/nn/recurrent_core.h"
#include "concord/nn/running_mean_std.h"

namespace concord::nn {

// What the policy head parameterises.
enum class ActionKind {
  kDiscrete,    // a Categorical over action_dim actions; actions are int64 [B]
  kContinuous,  // a DiagGaussian over R^action_dim; actions are float [B, action_dim]
};

// How to build an ActorCritic. The defaults are CleanRL's PPO network: separate actor and critic
// torsos, each a 64-64 tanh MLP. CleanRL's Atari network is torso = "cnn", shared_torso = true.
struct ActorCriticConfig {
  // One observation's shape, without the batch dimension: [obs_dim] for "mlp" (a longer shape is
  // flattened), [C, H, W] for "cnn", [H, W, C] for "grid_cnn".
  std::vector<int64_t> obs_shape;
  // Discrete (Categorical policy) or continuous (DiagGaussian policy) actions.
  ActionKind action_kind = ActionKind::kDiscrete;
  // Number of actions n (discrete) or action dimension d (continuous).
  int64_t action_dim = 0;
  // Continuous actions only: the action space's bounds, one per dimension (empty for discrete
  // actions). The actor-critic samples unbounded and the policies clip at the env boundary;
  // squashing actors (SAC) scale into them.
  std::vector<double> action_low;
  std::vector<double> action_high;
  // "mlp" (see mlp.h), "cnn" (Nature-DQN on pixels, see cnn.h) or "grid_cnn" (small channel-last
  // grids such as MinAtar's, see grid_cnn.h).
  std::string torso = "mlp";
  // mlp torso only: hidden layer sizes; empty gives linear heads on the raw observation.
  std::vector<int64_t> hidden_sizes = {64, 64};
  // mlp torso only: "tanh" or "relu" (the cnn torso always uses ReLU).
  std::string activation = "tanh";
  // One torso feeding both heads, instead of one torso for the actor and one for the critic.
  bool shared_torso = false;
  // cnn torso only: width of its final linear layer, the features the heads see.
  int64_t cnn_features = 512;
  // cnn torso only: divide pixel values by 255 before the first convolution.
  bool cnn_scale_input = true;
  // grid_cnn torso only; the defaults are MinAtar's reference network.
  std::vector<int64_t> grid_channels = {16};
  int64_t grid_kernel_size = 3;
  int64_t grid_stride = 1;
  int64_t grid_features = 128;
  // Continuous actions only: initial value of every element of log_std.
  double init_log_std = 0.0;
  // Normalise observations by their running mean and std (Gymnasium's NormalizeObservation,
  // clipped to +-10) before the torsos; the learner feeds the statistics.
  bool normalize_observations = false;
  // Memory: "lstm" or "gru" after each torso (recurrent_core.h), of recurrent_size cells, feeding
  // the heads; "" for none (a feed-forward network).
  std::string recurrent;
  int64_t recurrent_size = 128;
  // With memory only: hidden layers (with `activation`) between each core and its head, one stack
  // for the actor and one for the critic, as sb3-contrib's RecurrentPPO puts its net_arch after its
  // LSTM; empty: the heads read the core directly (CleanRL's ppo_atari_lstm.py).
  std::vector<int64_t> head_hidden_sizes;
  // Every layer orthogonal as CleanRL initialises it (init.h: torso layers gain sqrt(2), the
  // policy head 0.01, the value head 1, a core gain 1 with zero biases); false: PyTorch's defaults
  // for every layer (Stable-Baselines3's ortho_init=False, as RL Zoo's ppo_lstm presets use).
  bool orthogonal_init = true;

  // Throws std::invalid_argument listing every bad field with its value.
  void validate() const;
  // The grid_cnn torso's own config.
  GridCnnConfig grid_cnn() const;

  // The fields a run sets by config key (algo.<key>, shared by every algorithm); the others come
  // from the env's spaces or are fixed by the code that builds the network.
  static const core::ConfigFields<ActorCriticConfig>& fields();
};

// The action distribution of a batch of observations, Categorical or DiagGaussian behind one
// interface. Shapes for batch B: actions are int64 [B] (discrete) or float [B, d] (continuous);
// log_prob and entropy are [B].
class ActionDistribution {
 public:
  explicit ActionDistribution(Categorical categorical) : dist_(std::move(categorical)) {}
  explicit ActionDistribution(DiagGaussian gaussian) : dist_(std::move(gaussian)) {}

  bool is_discrete() const { return std::holds_alternative<Categorical>(dist_); }
  // A random action (detached), from LibTorch's global generator.
  torch::Tensor sample() const;
  torch::Tensor log_prob(const torch::Tensor& actions) const;
  torch::Tensor entropy() const;
  // The most likely action (argmax, or the mean), detached.
  torch::Tensor mode() const;

  // The underlying distribution; nullptr when it is the other kind.
  const Categorical* categorical() const { return std::get_if<Categorical>(&dist_); }
  const DiagGaussian* gaussian() const { return std::get_if<DiagGaussian>(&dist_); }

 private:
  std::variant<Categorical, DiagGaussian> dist_;
};

// forward()'s result. Exactly one of logits and mean is defined, by action kind.
struct PolicyOutput {
  torch::Tensor logits;   // discrete: unnormalised action logits [B, n]
  torch::Tensor mean;     // continuous: action mean [B, d]
  torch::Tensor log_std;  // continuous: the state-independent log_std parameter itself, [d]
  torch::Tensor value;    // state value [B]
};

// act()'s result, what a rollout stores.
struct ActResult {
  torch::Tensor action;    // int64 [B] or float [B, d], detached
  torch::Tensor log_prob;  // log pi(action | obs) [B]
  torch::Tensor value;     // V(obs) [B]
};

// A recurrent network's act(): the same, and the state to act from at the envs' next step.
struct RecurrentActResult {
  ActResult act;
  core::TensorMap state;
};

// A recurrent network's forward(): the distribution's parameters and V for one step, and the
// state after it.
struct RecurrentPolicyOutput {
  PolicyOutput out;
  core::TensorMap state;
};

// evaluate()'s result, what a policy-gradient loss needs.
struct ActionEvaluation {
  torch::Tensor log_prob;  // log pi(actions | obs) [B]
  torch::Tensor entropy;   // entropy of pi(. | obs) [B]
  torch::Tensor value;     // V(obs) [B]
};

// An actor-critic network: torso(s), a policy head and a value head.
//
//   separate (default):  obs -> actor torso  -> actor head  (gain 0.01) -> logits | mean
//                        obs -> critic torso -> critic head (gain 1.0)  -> value
//   shared:              obs -> torso -> both heads
//
// For continuous actions the standard deviation is exp(log_std), a learned [d] parameter that
// does not depend on the observation, initialised to config.init_log_std. Continuous actions are
// sampled unclipped; clipping to the action space's bounds happens at the environment boundary,
// and log_prob is that of the unclipped action.
//
// Observations are [B, *obs_shape] of any dtype on any device: every method first converts them
// to the parameters' dtype and device, so the network follows wherever `to()` moves it, and its
// results live there too. Grad mode is the caller's: wrap rollout calls in torch::NoGradGuard.
// Concurrent calls are safe while no thread modifies the parameters or the observation
// statistics (forward passes only read them).
//
// With config.normalize_observations, every method that reads observations (forward,
// distribution, value, act, evaluate) first normalises them with the submodule "obs_rms", a
// RunningMeanStd over obs_shape whose statistics are buffers: they travel with the model through
// to(), clone() and checkpoints, so acting, evaluation and a restored model all see the same
// inputs. The statistics change only through update_observation_stats(), which the learner calls
// with the raw observations of each rollout once it has learned from it.
//
// Submodules are "actor_torso" and "critic_torso" (or one "torso" when shared), "actor_head",
// "critic_head", "obs_rms" when observations are normalised, and for continuous actions the
// parameter "log_std". clone() gives a deep copy.
//
// An MLP torso runs with its head as one fused_linear_stack node (fused_linear_stack.h): the
// same parameters and mathematics as the composed modules, to rounding, without LibTorch's
// per-operation cost, which bounds a CartPole-sized update. set_fused(false) runs the composed
// modules instead, the reference that tests pin the fused path against.
class ActorCriticImpl : public torch::nn::Cloneable<ActorCriticImpl> {
 public:
  // Validates the config (see ActorCriticConfig::validate) and builds the network.
  explicit ActorCriticImpl(ActorCriticConfig config);

  // Builds (or, for clone(), rebuilds) every layer and initialises it.
  void reset() override;

  // Policy parameters and value for obs [B, *obs_shape].
  PolicyOutput forward(const torch::Tensor& obs);
  // The action distribution pi(. | obs); runs the actor path only when torsos are separate.
  ActionDistribution distribution(const torch::Tensor& obs);
  // The action distribution forward() parameterised: out's logits, or its mean and log_std. For
  // a batch whose rows are sampled apart (each from its own generator), on rows of one forward.
  ActionDistribution distribution(const PolicyOutput& out) const;
  // V(obs): [B]; runs the critic path only when torsos are separate.
  torch::Tensor value(const torch::Tensor& obs);
  // Picks actions: a sample, or the mode when `deterministic`.
  ActResult act(const torch::Tensor& obs, bool deterministic = false);
  // Log-probability and entropy of given actions (int64 [B] or float [B, d]) under pi(. | obs),
  // and V(obs), in one forward pass.
  ActionEvaluation evaluate(const torch::Tensor& obs, const torch::Tensor& actions);

  // --- With memory (config.recurrent set); the methods above then throw std::logic_error ---
  //
  //   shared torso:    obs -> torso -> core -> both heads          state {h[, c]}
  //   separate:        obs -> actor torso -> actor core -> actor head, the same for the critic
  //                                                                 state {actor_h, critic_h[, _c]}
  //
  // A state is what recurrent_core.h says, one [B, recurrent_size] tensor per name, the two
  // paths' prefixed when the torsos are separate. An empty state is every env's initial one
  // (zeros); `starts` [B] (or [T, B] for a sequence) 1 where an observation is the first of an
  // episode resets that env's state before it is read; undefined, no env starts.
  bool recurrent() const { return !config_.recurrent.empty(); }
  core::TensorMap initial_state(int64_t batch) const;
  // forward() for one step of B envs, from `state`; returns the state after the step. act() is
  // this and a draw from distribution(out).
  RecurrentPolicyOutput forward(const torch::Tensor& obs, const core::TensorMap& state, const torch::Tensor& starts);
  // act() for one step of B envs, from `state`; returns the state after the step.
  RecurrentActResult act(const torch::Tensor& obs, const core::TensorMap& state, const torch::Tensor& starts,
                         bool deterministic = false);
  // V(obs) [B] from `state` (the state is not advanced for the caller).
  torch::Tensor value(const torch::Tensor& obs, const core::TensorMap& state, const torch::Tensor& starts);
  // evaluate() over sequences of T steps of B envs re-run from the state they started with:
  // obs [T, B, ...], actions [T, B(, d)], starts [T, B]; results flattened time-major to [T * B].
  ActionEvaluation evaluate_sequence(const torch::Tensor& obs, const torch::Tensor& actions,
                                     const torch::Tensor& starts, const core::TensorMap& initial_state);
  // [T, B]: V(final_obs[t, b]) where truncated[t, b], else 0, each from the critic's state after
  // step t of the same re-run (the ended episode's own memory).
  torch::Tensor final_values_sequence(const torch::Tensor& obs, const torch::Tensor& final_obs,
                                      const torch::Tensor& truncated, const torch::Tensor& starts,
                                      const core::TensorMap& initial_state);

  // Folds raw observations [N, *obs_shape] into the normalisation statistics; does nothing when
  // observations are not normalised.
  void update_observation_stats(const torch::Tensor& obs);
  // The normalisation statistics; an empty holder when observations are not normalised.
  RunningMeanStd observation_stats() const { return obs_rms_; }

  const ActorCriticConfig& config() const { return config_; }

  // Whether an MLP torso runs fused (the default) or as the composed modules; clone() keeps it.
  void set_fused(bool fused) { fused_ = fused; }
  bool fused() const { return fused_; }

 private:
  // A torso of any kind: exactly one holder is set.
  struct Torso {
    MlpTorso mlp{nullptr};
    CnnTorso cnn{nullptr};
    GridCnnTorso grid{nullptr};
  };

  Torso make_torso(const std::string& name);
  static torch::Tensor run_torso(Torso& torso, const torch::Tensor& x);
  // Checks obs's shape, moves it to the parameters' device and dtype, normalises it when asked,
  // and flattens it for an MLP.
  torch::Tensor prepare(const torch::Tensor& obs) const;
  torch::Tensor actor_features(const torch::Tensor& x);
  torch::Tensor critic_features(const torch::Tensor& x);
  // `head` on torso features: fused when the torsos are.
  torch::Tensor head_output(torch::nn::Linear& head, const torch::Tensor& features);
  // The actor head's output (logits or mean) and the value [B] for prepared x.
  torch::Tensor actor_output(const torch::Tensor& x);
  torch::Tensor critic_output(const torch::Tensor& x);
  // Whether the torsos are MLPs run through fused_linear_stack (never with memory: the core sits
  // between the torso and its head).
  bool fused_mlp() const { return fused_ && actor_torso_.mlp && !actor_core_; }
  void require_feed_forward(const char* method) const;
  // The two paths' states as their cores hold them (initial where `state` is empty), and back.
  std::pair<std::vector<torch::Tensor>, std::vector<torch::Tensor>> unpack_state(const core::TensorMap& state,
                                                                                 int64_t batch) const;
  core::TensorMap pack_state(std::vector<torch::Tensor> actor, std::vector<torch::Tensor> critic) const;
  Torso& critic_torso() { return config_.shared_torso ? actor_torso_ : critic_torso_; }
  RecurrentCore& critic_core() { return config_.shared_torso ? actor_core_ : critic_core_; }
  ActionDistribution make_distribution(const torch::Tensor& head_out) const;
  // The heads on a core's output h [N, recurrent_size], through the head layers when there are
  // any: the actor's output (logits or mean) and the value [N].
  torch::Tensor actor_head_on_core(const torch::Tensor& h);
  torch::Tensor critic_head_on_core(const torch::Tensor& h);

  ActorCriticConfig config_;
  Torso actor_torso_;                     // the shared torso when config_.shared_torso
  Torso critic_torso_;                    // unset when config_.shared_torso
  RecurrentCore actor_core_{nullptr};     // the shared core when config_.shared_torso; unset without memory
  RecurrentCore critic_core_{nullptr};    // unset when config_.shared_torso or without memory
  MlpTorso actor_head_layers_{nullptr};   // config_.head_hidden_sizes, with memory only
  MlpTorso critic_head_layers_{nullptr};  // likewise, the critic's own
  torch::nn::Linear actor_head_{nullptr};
  torch::nn::Linear critic_head_{nullptr};
  torch::Tensor log_std_;            // [d], continuous actions only
  RunningMeanStd obs_rms_{nullptr};  // config_.normalize_observations only
  bool fused_ = true;
};
TORCH_MODULE(ActorCritic);

// Builds an ActorCritic directly on `device` (the learners' single place of device placement:
// their parameters are flattened right after, see flat_parameters.h).
ActorCritic build_actor_critic(const ActorCriticConfig& config, torch::Device device);

// Points the replica's buffers (the observation statistics, when normalised) at the primary's
// storage, so that replicas updating in place (hogwild) keep one set of statistics.
void share_observation_statistics(ActorCritic& replica, const ActorCritic& primary);

}  // namespace concord::nn
