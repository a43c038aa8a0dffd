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

// How to build a SoftQNetwork. CleanRL's SAC critic is hidden_sizes {256, 256}, "relu".
struct SoftQNetworkConfig {
  int64_t obs_dim = 0;                // observations are flattened to [B, obs_dim]
  int64_t action_dim = 0;             // d
  std::vector<int64_t> hidden_sizes;  // the torso's hidden layers (see mlp.h)
  std::string activation = "relu";    // "relu" or "tanh"
};

// SAC's soft Q-function Q(s, a), as CleanRL's SoftQNetwork:
//
//   Q(s, a) = fc_q(torso(concat(obs, action)))      -> [B]
//
// Actions are in the action space's units (what the actor returns). Every Linear keeps
// LibTorch's default initialisation (PyTorch's, which CleanRL's SAC uses). Observations [B, ...]
// and actions [B, d] of any dtype on any device are converted to the parameters' dtype and
// device. Submodules "torso" and "fc_q".
//
// The torso and fc_q run as one fused_linear_stack node (fused_linear_stack.h): the same
// parameters and mathematics as the composed modules, to rounding, without LibTorch's
// per-operation cost. set_fused(false) runs the composed modules, the reference of the tests.
class SoftQNetworkImpl : public torch::nn::Cloneable<SoftQNetworkImpl> {
 public:
  // Throws std::invalid_argument for a dimension < 1 or a bad torso (see MlpTorso).
  explicit SoftQNetworkImpl(SoftQNetworkConfig config);

  void reset() override;

  // Q(s, a): [B].
  torch::Tensor forward(const torch::Tensor& obs, const torch::Tensor& actions);
  // Q(s, a) whose gradient reaches the inputs but not the parameters: SAC's actor loss
  // differentiates through the critics without stepping them, and the fused path then skips
  // the products of the parameters' gradients (about a tenth of a SAC gradient step's
  // arithmetic). The composed path computes them, unused.
  torch::Tensor forward_frozen(const torch::Tensor& obs, const torch::Tensor& actions);

  const SoftQNetworkConfig& config() const { return config_; }
  // Whether the layers run fused (the default) or as the composed modules; clone() keeps it.
  void set_fused(bool fused) { fused_ = fused; }
  bool fused() const { return fused_; }

 private:
  SoftQNetworkConfig config_;
  MlpTorso torso_{nullptr};
  torch::Tensor evaluate(const torch::Tensor& obs, const torch::Tensor& actions, bool frozen);

  torch::nn::Linear fc_q_{nullptr};
  bool fused_ = true;
};
TORCH_MODULE(SoftQNetwork);

}  // namespace concord::nn
