#pragma once

#include <cstdint>
#include <vector>

#include <torch/nn/cloneable.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

namespace concord::nn {

// How to build a GridCnnTorso. The defaults are MinAtar's reference network (Young & Tian 2019):
// one 3x3 convolution with 16 channels, stride 1, then a 128-unit layer.
struct GridCnnConfig {
  // One observation, channel-last as grid environments write it: [H, W, C].
  std::vector<int64_t> obs_shape;
  // Output channels of each convolution, in order (at least one).
  std::vector<int64_t> channels = {16};
  int64_t kernel_size = 3;
  int64_t stride = 1;
  // Width of the final linear layer: the features the heads see.
  int64_t features = 128;

  // Spatial size [h, w] after the convolutions (unpadded); a non-positive entry means the grid is
  // too small for them.
  std::vector<int64_t> output_grid() const;
};

// A convolutional torso for small grids of binary or byte channels (MinAtar, gridworlds):
//   x [B, H, W, C] of any dtype -> float -> permute to [B, C, H, W]
//     -> (conv k x k stride s -> ReLU) per entry of channels -> flatten
//     -> Linear(flatten_dim(), features) -> ReLU   = [B, features]
// Values are not rescaled (grid cells are already 0/1). Every layer is initialised orthogonally
// with gain sqrt(2) and zero bias, like the other torsos. Layers are "conv0", "conv1", ... and
// "fc"; clone() gives a deep copy.
class GridCnnTorsoImpl : public torch::nn::Cloneable<GridCnnTorsoImpl> {
 public:
  // Throws std::invalid_argument, printing the values, when obs_shape is not [H, W, C] with
  // positive entries, a size is below 1, or the grid is too small for the convolutions.
  explicit GridCnnTorsoImpl(GridCnnConfig config);

  void reset() override;

  // x [B, H, W, C] -> [B, features]. Throws std::invalid_argument on another shape.
  torch::Tensor forward(const torch::Tensor& x);

  const GridCnnConfig& config() const { return config_; }
  int64_t output_dim() const { return config_.features; }
  int64_t flatten_dim() const { return flatten_dim_; }

 private:
  GridCnnConfig config_;
  int64_t flatten_dim_ = 0;
  std::vector<torch::nn::Conv2d> convs_;
  torch::nn::Linear fc_{nullptr};
};
TORCH_MODULE(GridCnnTorso);

}  // namespace concord::nn
