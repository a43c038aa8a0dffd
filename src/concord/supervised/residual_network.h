#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/types.h>

namespace concord::supervised {

// One basic block of He et al.'s residual networks (2016, section 4.2, the CIFAR-10 models):
// y = relu(bn(conv3x3(relu(bn(conv3x3(x))))) + shortcut(x)). When the block halves the
// resolution and doubles the channels, the shortcut is the paper's option A, parameter-free:
// x subsampled by 2 and its new channels zero-padded.
class BasicBlockImpl : public torch::nn::Module {
 public:
  BasicBlockImpl(int64_t in_channels, int64_t out_channels, int64_t stride);
  torch::Tensor forward(const torch::Tensor& x);

 private:
  torch::nn::Conv2d conv1_{nullptr}, conv2_{nullptr};
  torch::nn::BatchNorm2d bn1_{nullptr}, bn2_{nullptr};
  int64_t stride_;
  int64_t extra_channels_;
};
TORCH_MODULE(BasicBlock);

// The CIFAR ResNet of depth 6n + 2 on [B, 1, 28, 28] images: a 3x3 convolution to 16 channels,
// three stages of n basic blocks at 16, 32 and 64 channels (28x28, 14x14, 7x7), global average
// pooling and a linear layer to 10 logits. n = 3 is ResNet-20 (272,474 parameters). Batch norm
// after every convolution; convolutions start from He (fan-out) initialisation. Draws from
// LibTorch's global generator.
torch::nn::Sequential make_residual_network(int64_t blocks_per_stage);

}  // namespace concord::supervised
