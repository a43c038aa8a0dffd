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
class SoftQNetworkImpl : public torch::nn::Cloneable<SoftQNetworkImpl> {
 public:
  // Throws std::invalid_argument for a dimension < 1 or a bad torso (see MlpTorso).
  explicit SoftQNetworkImpl(SoftQNetworkConfig config);

  void reset() override;

  // Q(s, a): [B].
  torch::Tensor forward(const torch::Tensor& obs, const torch::Tensor& actions);

  const SoftQNetworkConfig& config() const { return config_; }

 private:
  SoftQNetworkConfig config_;
  MlpTorso torso_{nullptr};
  torch::nn::Linear fc_q_{nullptr};
};
TORCH_MODULE(SoftQNetwork);

}  // namespace concord::nn
