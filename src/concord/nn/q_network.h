#pragma once

#include <cstdint>
#include <vector>

#include <torch/nn/cloneable.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include "concord/core/tensor_map.h"
#include "concord/nn/actor_critic.h"
#include "concord/nn/cnn.h"
#include "concord/nn/grid_cnn.h"
#include "concord/nn/mlp.h"

namespace concord::nn {

// How to build a QNetwork.
struct QNetworkConfig {
  // The torso and the sizes, shared with the actor-critic's keys (algo.<key>): obs_shape,
  // action_dim (the number of actions), torso ("mlp", "cnn" or "grid_cnn") and its fields
  // (hidden_sizes, activation, cnn_*, grid_*). action_kind must be kDiscrete; shared_torso and
  // init_log_std mean nothing here, and normalize_observations is not supported.
  ActorCriticConfig torso;
  // Dueling architecture (Wang et al., 2016): a value and an advantage head on the torso,
  // combined as Q = V + A - mean_a A.
  bool dueling = false;

  // Throws std::invalid_argument listing every bad field with its value.
  void validate() const;
};

// An action-value network for discrete actions: Q(o, .) for a batch of observations.
//
//   plain:    obs -> torso -> Linear(features, n)                           = Q [B, n]
//   dueling:  obs -> torso -> value head Linear(features, 1)       = V [B, 1]
//                          -> advantage head Linear(features, n)   = A [B, n]
//             Q = V + A - mean_a A                                           = Q [B, n]
//
// Dueling here puts one linear layer in each stream on a shared torso; Wang et al.'s Atari network
// gives each stream its own hidden layer as well.
//
// Initialisation: PyTorch's defaults for every layer (Kaiming-uniform weights, uniform biases in
// +-1/sqrt(fan_in)), as CleanRL's dqn.py and dqn_atari.py and MinAtar's dqn.py build their
// Q-networks; the torsos' own orthogonal initialisation (init.h) is replaced. Draws from
// LibTorch's global generator (seed it with torch::manual_seed).
//
// Observations are [B, *obs_shape] of any dtype on any device: they are converted to the
// parameters' dtype and device first (uint8 grids and pixels included; the cnn torso scales
// pixels by 1/255 when config.torso.cnn_scale_input). Grad mode is the caller's. Concurrent
// forward passes are safe while no thread modifies the parameters.
//
// With memory (torso.recurrent = "lstm" or "gru", R2D2's network: Kapturowski et al. 2019), a
// RecurrentCore of torso.recurrent_size cells sits between the torso and the heads:
//
//   obs -> torso -> core (state {h[, c]}, recurrent_core.h) -> head(s)                = Q [B, n]
//
// and Q comes from step() (one step of B envs) or unroll() (sequences), never from forward().
//
// Submodules: "torso", "core" with memory, then "head", or "value_head" and "advantage_head"
// when dueling. clone() gives a deep copy.
class QNetworkImpl : public torch::nn::Cloneable<QNetworkImpl> {
 public:
  // Validates the config and builds the network. Throws std::invalid_argument.
  explicit QNetworkImpl(QNetworkConfig config);

  // Builds (or, for clone(), rebuilds) every layer and initialises it.
  void reset() override;

  // Q(obs, .): [B, num_actions()]. Throws std::invalid_argument on observations of another shape,
  // std::logic_error for a network with memory.
  torch::Tensor forward(const torch::Tensor& obs);

  // --- With memory (config().torso.recurrent set) ---
  // A state is one [B, recurrent_size] tensor per name of the core ("h", "c" for an LSTM); an
  // empty map is every env's initial state (zeros). `starts` 1 where an observation is the first
  // of an episode resets that env's state before it is read (undefined: none starts).
  bool recurrent() const { return static_cast<bool>(core_); }
  core::TensorMap initial_state(int64_t batch) const;
  // Q for one step of B envs, obs [B, ...], starts [B]; `state` becomes the state after it.
  torch::Tensor step(const torch::Tensor& obs, const torch::Tensor& starts, core::TensorMap& state);
  // Q for sequences, obs [T, B, ...], starts [T, B] -> [T, B, num_actions()]; `state` goes in as
  // the state before step 0 and comes out as the state after step T - 1.
  torch::Tensor unroll(const torch::Tensor& obs, const torch::Tensor& starts, core::TensorMap& state);

  int64_t num_actions() const { return config_.torso.action_dim; }
  const QNetworkConfig& config() const { return config_; }

 private:
  // Observations [*leading, *obs_shape] converted to the parameters' dtype and device. Throws
  // std::invalid_argument on another shape.
  torch::Tensor converted(const torch::Tensor& obs, int64_t leading_dims) const;
  // The cnn or grid_cnn torso's features for converted observations.
  torch::Tensor features(const torch::Tensor& x);
  // Any torso's features for converted observations [N, ...] (the core's input).
  torch::Tensor torso_features(const torch::Tensor& x);
  // Q from features [N, F] through the plain or dueling heads.
  torch::Tensor heads(const torch::Tensor& h);
  std::vector<torch::Tensor> unpack(const core::TensorMap& state, int64_t batch) const;
  core::TensorMap pack(std::vector<torch::Tensor> state) const;
  // Q for converted, flattened observations through the MLP torso.
  torch::Tensor mlp_forward(const torch::Tensor& x);
  // Q = V + A - mean_a A from the torso's features (dueling heads).
  torch::Tensor dueling_combination(const torch::Tensor& h);

  QNetworkConfig config_;
  MlpTorso mlp_{nullptr};  // exactly one torso is set, by config_.torso.torso
  CnnTorso cnn_{nullptr};
  GridCnnTorso grid_{nullptr};
  RecurrentCore core_{nullptr};                // with memory only
  torch::nn::Linear head_{nullptr};            // plain
  torch::nn::Linear value_head_{nullptr};      // dueling
  torch::nn::Linear advantage_head_{nullptr};  // dueling
};
TORCH_MODULE(QNetwork);

// Builds a QNetwork directly on `device` (a learner's one place of device placement: its
// parameters are flattened right after, see flat_parameters.h).
QNetwork build_q_network(const QNetworkConfig& config, torch::Device device);

}  // namespace concord::nn
