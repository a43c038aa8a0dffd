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
  // Generalised state-dependent exploration (gSDE, Raffin et al., 2021) instead of the
  // state-dependent log_std head; see the class comment.
  bool use_sde = false;
  double log_std_init = -3.0;  // gSDE only: every element of the log_std parameter at the start
  double clip_mean = 2.0;      // gSDE only: the mean is clipped to [-clip_mean, clip_mean] (0: not)
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
// With config.use_sde, exploration is gSDE as Stable-Baselines3's SAC runs it (full_std, exp,
// learned features): no fc_logstd; a parameter log_std [F, d] (F = the torso's output width,
// every element log_std_init); an exploration matrix W ~ N(0, exp(log_std)^2), drawn by
// reset_noise() and kept until the next one, so that the noise is a deterministic function of
// the state between draws:
//
//   mean = clip(fc_mean(h), -clip_mean, clip_mean)
//   u = mean + h W                          (row i uses its own W_i when reset_noise(B) drew B)
//   sigma = sqrt(h^2 exp(log_std)^2 + 1e-6) the std of u given h, over W
//   log pi(a | s) = sum_j [ log N(u_j; mean_j, sigma_j) - log(scale_j (1 - tanh(u_j)^2) + 1e-6) ]
//
// W is exp(log_std) times standard normal noise, so sample()'s graph reaches log_std through the
// noise too (SB3's rsample of the weights). forward()'s log_std is then log(sigma) [B, d].
//
// Observations are [B, ...] of any dtype on any device: they are flattened to [B, obs_dim] and
// converted to the parameters' dtype and device. Noise comes from core::thread_generator.
// Submodules "torso", "fc_mean", "fc_logstd" (or the parameter "log_std" with gSDE); buffers
// "action_scale" and "action_bias" [d].
//
// The torso and each head run as fused_linear_stack nodes (fused_linear_stack.h): the same
// parameters and mathematics as the composed modules, to rounding, without LibTorch's
// per-operation cost. set_fused(false) runs the composed modules, the reference of the tests.
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

  // A reparameterised sample (the graph reaches the parameters) and its log-probability. With
  // gSDE it uses the exploration matrices of the last reset_noise() (drawing one first if none).
  SquashedSample sample(const torch::Tensor& obs);
  // The same with the standard normal noise given ([B, d]), for tests; not with gSDE.
  SquashedSample sample(const torch::Tensor& obs, const torch::Tensor& noise);
  // gSDE only: draws new exploration noise, one matrix for every batch and, with batch > 1, one
  // per row for batches of exactly `batch` rows (one per env when acting in parallel).
  void reset_noise(int64_t batch = 1);
  // tanh(mean) * scale + bias: the policy's deterministic action.
  torch::Tensor deterministic_action(const torch::Tensor& obs);

  const SquashedGaussianActorConfig& config() const { return config_; }
  // Whether the layers run fused (the default) or as the composed modules; clone() keeps it.
  void set_fused(bool fused) { fused_ = fused; }
  bool fused() const { return fused_; }
  const torch::Tensor& action_scale() const { return action_scale_; }
  const torch::Tensor& action_bias() const { return action_bias_; }

 private:
  torch::Tensor prepare(const torch::Tensor& obs) const;
  // The torso's features, and a head's output on them, fused or composed.
  torch::Tensor features(const torch::Tensor& x);
  torch::Tensor head(torch::nn::Linear& layer, const torch::Tensor& h);
  // gSDE's mean, std = exp(log_std) [F, d] and sigma [B, d] for torso features h [B, F].
  struct SdeParameters {
    torch::Tensor mean, std, sigma;
  };
  SdeParameters sde_parameters(const torch::Tensor& h);

  SquashedGaussianActorConfig config_;
  MlpTorso torso_{nullptr};
  torch::nn::Linear fc_mean_{nullptr};
  torch::nn::Linear fc_logstd_{nullptr};  // without gSDE
  torch::Tensor sde_log_std_;             // gSDE: [F, d]
  torch::Tensor sde_noise_;               // gSDE: standard normal [F, d] of the shared matrix
  torch::Tensor sde_row_noise_;           // gSDE: [batch, F, d], or undefined for batch 1
  torch::Tensor action_scale_;
  torch::Tensor action_bias_;
  bool fused_ = true;
};
TORCH_MODULE(SquashedGaussianActor);

}  // namespace concord::nn
