#include "concord/supervised/residual_network.h"

#include <torch/nn/init.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/pooling.h>
#include <torch/torch.h>

namespace concord::supervised {
namespace {

torch::nn::Conv2d conv3x3(int64_t in_channels, int64_t out_channels, int64_t stride) {
  torch::nn::Conv2d conv(torch::nn::Conv2dOptions(in_channels, out_channels, 3).stride(stride).padding(1).bias(false));
  torch::nn::init::kaiming_normal_(conv->weight, 0.0, torch::kFanOut, torch::kReLU);
  return conv;
}

}  // namespace

BasicBlockImpl::BasicBlockImpl(int64_t in_channels, int64_t out_channels, int64_t stride)
    : conv1_(register_module("conv1", conv3x3(in_channels, out_channels, stride))),
      conv2_(register_module("conv2", conv3x3(out_channels, out_channels, 1))),
      bn1_(register_module("bn1", torch::nn::BatchNorm2d(out_channels))),
      bn2_(register_module("bn2", torch::nn::BatchNorm2d(out_channels))),
      stride_(stride),
      extra_channels_(out_channels - in_channels) {}

torch::Tensor BasicBlockImpl::forward(const torch::Tensor& x) {
  torch::Tensor out = torch::relu(bn1_->forward(conv1_->forward(x)));
  out = bn2_->forward(conv2_->forward(out));
  torch::Tensor shortcut = x;
  if (stride_ != 1) shortcut = shortcut.slice(2, 0, c10::nullopt, stride_).slice(3, 0, c10::nullopt, stride_);
  if (extra_channels_ > 0) {
    // Option A: the new channels are zeros, split evenly before and after the old ones.
    shortcut =
        torch::constant_pad_nd(shortcut, {0, 0, 0, 0, extra_channels_ / 2, extra_channels_ - extra_channels_ / 2});
  }
  return torch::relu(out + shortcut);
}

torch::nn::Sequential make_residual_network(int64_t blocks_per_stage) {
  namespace tnn = torch::nn;
  tnn::Sequential network(conv3x3(1, 16, 1), tnn::BatchNorm2d(16), tnn::ReLU());
  int64_t channels = 16;
  for (int64_t stage = 0; stage < 3; ++stage) {
    const int64_t out_channels = 16 << stage;
    for (int64_t block = 0; block < blocks_per_stage; ++block) {
      const int64_t stride = stage > 0 && block == 0 ? 2 : 1;
      network->push_back(BasicBlock(channels, out_channels, stride));
      channels = out_channels;
    }
  }
  network->push_back(tnn::AdaptiveAvgPool2d(1));
  network->push_back(tnn::Flatten());
  network->push_back(tnn::Linear(channels, 10));
  return network;
}

}  // namespace concord::supervised
