#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/nn/cloneable.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

namespace concord::nn {

// The nonlinearity between layers of a torso.
enum class Activation { kTanh, kRelu };

// "tanh" -> kTanh, "relu" -> kRelu; anything else throws std::invalid_argument naming it.
Activation parse_activation(const std::string& name);

// A multilayer perceptron torso: Linear -> activation for each hidden size, the activation
// following the last layer too (the heads on top are linear). CleanRL's PPO torso is
// MlpTorso(obs_dim, {64, 64}, "tanh").
//
// forward: x [B, input_dim] -> [B, output_dim()]. `x` may be of any floating or integral dtype
// and on any device: it is converted to the parameters' dtype and device first, so the module
// follows wherever `to()` moves it. With no hidden sizes the torso has no parameters and is the
// identity (x is returned as given) and output_dim() == input_dim.
//
// Layers are initialised orthogonally with gain sqrt(2) and zero bias (see init.h). Layers are
// registered as "fc0", "fc1", ...; clone() gives an independent deep copy. Through the holder,
// spell the sizes out: MlpTorso(4, std::vector<int64_t>{64, 64}) (a braced list cannot be
// forwarded).
class MlpTorsoImpl : public torch::nn::Cloneable<MlpTorsoImpl> {
 public:
  // Throws std::invalid_argument when input_dim or a hidden size is < 1 or the activation is not
  // "tanh" or "relu".
  MlpTorsoImpl(int64_t input_dim, std::vector<int64_t> hidden_sizes, const std::string& activation = "tanh");

  // Builds (or, for clone(), rebuilds) the layers and initialises them.
  void reset() override;

  torch::Tensor forward(const torch::Tensor& x);

  int64_t input_dim() const { return input_dim_; }
  int64_t output_dim() const;
  const std::vector<int64_t>& hidden_sizes() const { return hidden_sizes_; }
  Activation activation() const { return activation_; }
  // The layers in order ("fc0", "fc1", ...), for fused_linear_stack().
  const std::vector<torch::nn::Linear>& layers() const { return layers_; }

 private:
  int64_t input_dim_;
  std::vector<int64_t> hidden_sizes_;
  Activation activation_;
  std::vector<torch::nn::Linear> layers_;
};
TORCH_MODULE(MlpTorso);

}  // namespace concord::nn
