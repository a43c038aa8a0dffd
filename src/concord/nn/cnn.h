#pragma once

#include <cstdint>
#include <vector>

#include <torch/nn/cloneable.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

namespace concord::nn {

// The Nature-DQN convolutional torso (Mnih et al. 2015), as in CleanRL's Atari agents:
//   x [B, C, H, W] -> (x / 255 if scale_input) -> conv 32 8x8 stride 4 -> ReLU
//     -> conv 64 4x4 stride 2 -> ReLU -> conv 64 3x3 stride 1 -> ReLU -> flatten
//     -> Linear(flatten_dim(), output_dim) -> ReLU   = [B, output_dim]
// with no padding. flatten_dim() is computed from obs_shape at construction
// (64 * 7 * 7 = 3136 for 84x84 frames); H and W must be at least 36.
//
// `x` may be uint8 pixels or floats on any device: it is converted to the parameters' dtype and
// device first. Every layer is initialised orthogonally with gain sqrt(2) and zero bias.
// Layers are registered as "conv0", "conv1", "conv2", "fc"; clone() gives a deep copy.
class CnnTorsoImpl : public torch::nn::Cloneable<CnnTorsoImpl> {
 public:
  // obs_shape is [C, H, W]. Throws std::invalid_argument, printing the values, when it does not
  // have three positive entries, H or W is below 36, or output_dim < 1.
  explicit CnnTorsoImpl(std::vector<int64_t> obs_shape, int64_t output_dim = 512, bool scale_input = true);

  // Builds (or, for clone(), rebuilds) the layers and initialises them.
  void reset() override;

  // x [B, C, H, W] -> [B, output_dim()]. Throws std::invalid_argument on another shape.
  torch::Tensor forward(const torch::Tensor& x);

  const std::vector<int64_t>& obs_shape() const { return obs_shape_; }
  int64_t output_dim() const { return output_dim_; }
  // Number of features after the last convolution: 64 * h3 * w3.
  int64_t flatten_dim() const { return flatten_dim_; }
  bool scale_input() const { return scale_input_; }

 private:
  std::vector<int64_t> obs_shape_;
  int64_t output_dim_;
  bool scale_input_;
  int64_t flatten_dim_ = 0;
  torch::nn::Conv2d conv0_{nullptr};
  torch::nn::Conv2d conv1_{nullptr};
  torch::nn::Conv2d conv2_{nullptr};
  torch::nn::Linear fc_{nullptr};
};
TORCH_MODULE(CnnTorso);

}  // namespace concord::nn
