#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/nn/cloneable.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include "concord/nn/mlp.h"

namespace concord::nn {

// The bounds of the state-dependent log standard deviation (CleanRL's LOG_STD_MIN/MAX, from
// SpinUp and Denis Yarats' SAC).
inline constexpr double kSquashedLogStdMin = -5.0;
inline constexpr double kSquashedLogStdMax = 2.0;

// How to build a SquashedGaussianActor. CleanRL's SAC actor is hidden_sizes {256, 256}, "relu".
struct SquashedGaussianActorConfig {
  int64_t obs_dim = 0;                // observations are flattened to [B, obs_dim]
  int64_t action_dim = 0;             // d
  std::vector<int64_t> hidden_sizes;  // the torso's hidden layers (see mlp.h)
  std::string activation = "relu";    // "relu" or "tanh"
  std::vector<double> action_low;     // [d] finite bounds of the action space; both empty:
  std::vector<double> action_high;    // [-1, 1] in every dimension
};

// A batch of actions drawn from the policy, with the graph back to the parameters (the
// reparameterisation trick), for SAC's losses.
struct SquashedSample {
  torch::Tensor action;       // tanh(u) * scale + bias, [B, d], in the action space's units
  torch::Tensor log_prob;     // log pi(action | obs), [B]
  torch::Tensor mean_action;  // tanh(mean) * scale + bias, [B, d]: the deterministic action
};

// log pi(a | s) of a = tanh(u) * scale + bias with u ~ N(mean, exp(log_std)), every argument
// [B, d] except action_scale [d]:
//   sum_j [ log N(u_j; mean_j, std_j) - log(scale_j * (1 - tanh(u_j)^2) + 1e-6) ]  -> [B]
// (the change of variables through tanh and the affine rescaling; the 1e-6 keeps the log finite
// where tanh saturates, as CleanRL and SpinUp do).
torch::Tensor squashed_gaussian_log_prob(const torch::Tensor& u, const torch::Tensor& mean,
                                         const torch::Tensor& log_std, const torch::Tensor& action_scale);

// SAC's policy (Haarnoja et al., 2018), as CleanRL's sac_continuous_action.py builds it:
//
//   h = torso(obs)                          an MLP (mlp.h)
//   mean = fc_mean(h)                       [B, d]
//   log_std = fc_logstd(h)                  squashed into [kSquashedLogStdMin, kSquashedLogStdMax]:
//           = min + (max - min) * (tanh(log_std) + 1) / 2
//   u = mean + exp(log_std) * eps,  eps ~ N(0, I)
//   action = tanh(u) * action_scale + action_bias
//
// with action_scale = (high - low) / 2 and action_bias = (high + low) / 2, so actions always lie
// in the action space. Every Linear keeps LibTorch's default initialisation (PyTorch's, which
// CleanRL's SAC uses), not the orthogonal one of the actor-critic networks.
//
// Observations are [B, ...] of any dtype on any device: they are flattened to [B, obs_dim] and
// converted to the parameters' dtype and device. Noise comes from core::thread_generator.
// Submodules "torso", "fc_mean", "fc_logstd"; buffers "action_scale" and "action_bias" [d].
class SquashedGaussianActorImpl : public torch::nn::Cloneable<SquashedGaussianActorImpl> {
 public:
  // Throws std::invalid_argument for a dimension < 1, bounds of the wrong size, not finite, or
  // with low >= high.
  explicit SquashedGaussianActorImpl(SquashedGaussianActorConfig config);

  void reset() override;

  struct Output {
    torch::Tensor mean;     // [B, d]
    torch::Tensor log_std;  // [B, d], in [kSquashedLogStdMin, kSquashedLogStdMax]
  };
  Output forward(const torch::Tensor& obs);

  // A reparameterised sample (the graph reaches the parameters) and its log-probability.
  SquashedSample sample(const torch::Tensor& obs);
  // The same with the standard normal noise given ([B, d]), for tests.
  SquashedSample sample(const torch::Tensor& obs, const torch::Tensor& noise);
  // tanh(mean) * scale + bias: the policy's deterministic action.
  torch::Tensor deterministic_action(const torch::Tensor& obs);

  const SquashedGaussianActorConfig& config() const { return config_; }
  const torch::Tensor& action_scale() const { return action_scale_; }
  const torch::Tensor& action_bias() const { return action_bias_; }

 private:
  torch::Tensor prepare(const torch::Tensor& obs) const;

  SquashedGaussianActorConfig config_;
  MlpTorso torso_{nullptr};
  torch::nn::Linear fc_mean_{nullptr};
  torch::nn::Linear fc_logstd_{nullptr};
  torch::Tensor action_scale_;
  torch::Tensor action_bias_;
};
TORCH_MODULE(SquashedGaussianActor);

}  // namespace concord::nn
