#include "concord/nn/cnn.h"

#include <array>
#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

#include "concord/nn/init.h"

namespace concord::nn {
namespace {

struct ConvSpec {
  int64_t channels;
  int64_t kernel;
  int64_t stride;
};

// The three Nature-DQN convolutions.
constexpr std::array<ConvSpec, 3> kConvs = {{{32, 8, 4}, {64, 4, 2}, {64, 3, 1}}};

// Spatial size after an unpadded convolution.
int64_t conv_out(int64_t in, const ConvSpec& spec) { return (in - spec.kernel) / spec.stride + 1; }

std::string shape_string(const std::vector<int64_t>& shape) {
  std::ostringstream out;
  out << "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    out << (i ? ", " : "") << shape[i];
  }
  out << "]";
  return out.str();
}

}  // namespace

CnnTorsoImpl::CnnTorsoImpl(std::vector<int64_t> obs_shape, int64_t output_dim, bool scale_input)
    : obs_shape_(std::move(obs_shape)), output_dim_(output_dim), scale_input_(scale_input) {
  const bool valid_shape = obs_shape_.size() == 3 && obs_shape_[0] >= 1 && obs_shape_[1] >= 36 && obs_shape_[2] >= 36;
  if (!valid_shape || output_dim_ < 1) {
    throw std::invalid_argument(
        "CnnTorso: obs_shape must be [C, H, W] with C >= 1 and H, W >= 36,"
        " and output_dim >= 1; got obs_shape=" +
        shape_string(obs_shape_) + " output_dim=" + std::to_string(output_dim_));
  }
  int64_t height = obs_shape_[1];
  int64_t width = obs_shape_[2];
  for (const ConvSpec& spec : kConvs) {
    height = conv_out(height, spec);
    width = conv_out(width, spec);
  }
  flatten_dim_ = kConvs.back().channels * height * width;
  reset();
}

void CnnTorsoImpl::reset() {
  const double gain = std::sqrt(2.0);
  std::array<torch::nn::Conv2d*, 3> convs = {&conv0_, &conv1_, &conv2_};
  int64_t in_channels = obs_shape_[0];
  for (size_t i = 0; i < kConvs.size(); ++i) {
    const ConvSpec& spec = kConvs[i];
    torch::nn::Conv2d conv(torch::nn::Conv2dOptions(in_channels, spec.channels, spec.kernel).stride(spec.stride));
    orthogonal_init(*conv, gain);
    *convs[i] = register_module("conv" + std::to_string(i), conv);
    in_channels = spec.channels;
  }
  fc_ = register_module("fc", torch::nn::Linear(flatten_dim_, output_dim_));
  orthogonal_init(fc_, gain);
}

torch::Tensor CnnTorsoImpl::forward(const torch::Tensor& x) {
  if (x.dim() != 4 || x.size(1) != obs_shape_[0] || x.size(2) != obs_shape_[1] || x.size(3) != obs_shape_[2]) {
    std::ostringstream message;
    message << "CnnTorso: expected input [B, " << obs_shape_[0] << ", " << obs_shape_[1] << ", " << obs_shape_[2]
            << "], got " << x.sizes();
    throw std::invalid_argument(message.str());
  }
  const torch::Tensor& weight = conv0_->weight;
  torch::Tensor h = x.to(weight.device(), weight.scalar_type());
  if (scale_input_) {
    h = h / 255.0;
  }
  h = conv0_->forward(h).relu();
  h = conv1_->forward(h).relu();
  h = conv2_->forward(h).relu();
  return fc_->forward(h.flatten(1)).relu();
}

}  // namespace concord::nn
