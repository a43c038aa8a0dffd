#include "concord/nn/grid_cnn.h"

#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

#include <torch/nn/functional/activation.h>

#include "concord/nn/init.h"

namespace concord::nn {
namespace {

std::string list_string(const std::vector<int64_t>& values) {
  std::ostringstream out;
  out << "[";
  for (size_t i = 0; i < values.size(); ++i) out << (i ? ", " : "") << values[i];
  out << "]";
  return out.str();
}

}  // namespace

std::vector<int64_t> GridCnnConfig::output_grid() const {
  if (obs_shape.size() != 3 || stride < 1) return {0, 0};
  int64_t height = obs_shape[0];
  int64_t width = obs_shape[1];
  for (size_t i = 0; i < channels.size(); ++i) {
    height = (height - kernel_size) / stride + 1;
    width = (width - kernel_size) / stride + 1;
  }
  return {height, width};
}

GridCnnTorsoImpl::GridCnnTorsoImpl(GridCnnConfig config) : config_(std::move(config)) {
  bool positive = config_.obs_shape.size() == 3 && !config_.channels.empty() && config_.kernel_size >= 1 &&
                  config_.stride >= 1 && config_.features >= 1;
  for (int64_t size : config_.obs_shape) positive = positive && size >= 1;
  for (int64_t size : config_.channels) positive = positive && size >= 1;
  const std::vector<int64_t> grid = config_.output_grid();
  if (!positive || grid[0] < 1 || grid[1] < 1) {
    throw std::invalid_argument(
        "GridCnnTorso: needs obs_shape [H, W, C] large enough for " + std::to_string(config_.channels.size()) +
        " unpadded " + std::to_string(config_.kernel_size) + "x" + std::to_string(config_.kernel_size) +
        " convolutions and positive sizes; got obs_shape=" + list_string(config_.obs_shape) +
        " channels=" + list_string(config_.channels) + " stride=" + std::to_string(config_.stride) +
        " features=" + std::to_string(config_.features));
  }
  flatten_dim_ = config_.channels.back() * grid[0] * grid[1];
  reset();
}

void GridCnnTorsoImpl::reset() {
  const double gain = std::sqrt(2.0);
  convs_.clear();
  int64_t in_channels = config_.obs_shape[2];
  for (size_t i = 0; i < config_.channels.size(); ++i) {
    torch::nn::Conv2d conv(
        torch::nn::Conv2dOptions(in_channels, config_.channels[i], config_.kernel_size).stride(config_.stride));
    orthogonal_init(*conv, gain);
    convs_.push_back(register_module("conv" + std::to_string(i), conv));
    in_channels = config_.channels[i];
  }
  fc_ = register_module("fc", torch::nn::Linear(flatten_dim_, config_.features));
  orthogonal_init(fc_, gain);
}

torch::Tensor GridCnnTorsoImpl::forward(const torch::Tensor& x) {
  const auto& shape = config_.obs_shape;
  if (x.dim() != 4 || x.size(1) != shape[0] || x.size(2) != shape[1] || x.size(3) != shape[2]) {
    std::ostringstream message;
    message << "GridCnnTorso: expected input [B, " << shape[0] << ", " << shape[1] << ", " << shape[2] << "], got "
            << x.sizes();
    throw std::invalid_argument(message.str());
  }
  const torch::Tensor& weight = fc_->weight;
  // Channel-last grids become the [B, C, H, W] layout convolutions read.
  torch::Tensor h = x.to(weight.device(), weight.scalar_type()).permute({0, 3, 1, 2});
  for (auto& conv : convs_) h = torch::relu(conv->forward(h));
  return torch::relu(fc_->forward(h.flatten(1)));
}

}  // namespace concord::nn
