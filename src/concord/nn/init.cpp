#include "concord/nn/init.h"

#include <vector>

#include <torch/nn/init.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/rnn.h>

namespace concord::nn {
namespace {

// Orthogonal weight, constant bias (when there is a bias), without recording gradients.
void init_weight_and_bias(const torch::Tensor& weight, const torch::Tensor& bias, double gain, double bias_const) {
  torch::NoGradGuard no_grad;
  torch::nn::init::orthogonal_(weight, gain);
  if (bias.defined()) {
    bias.fill_(bias_const);
  }
}

}  // namespace

void orthogonal_init(const torch::nn::Linear& linear, double gain, double bias_const) {
  init_weight_and_bias(linear->weight, linear->bias, gain, bias_const);
}

void orthogonal_init(torch::nn::Module& module, double gain, double bias_const) {
  // modules(include_self = false) plus `module` itself: asking for include_self requires the
  // module to be owned by a shared_ptr, which a caller's reference need not be.
  std::vector<torch::nn::Module*> targets = {&module};
  for (const auto& child : module.modules(/*include_self=*/false)) {
    targets.push_back(child.get());
  }
  for (torch::nn::Module* target : targets) {
    if (auto* linear = dynamic_cast<torch::nn::LinearImpl*>(target)) {
      init_weight_and_bias(linear->weight, linear->bias, gain, bias_const);
    } else if (auto* conv1 = dynamic_cast<torch::nn::Conv1dImpl*>(target)) {
      init_weight_and_bias(conv1->weight, conv1->bias, gain, bias_const);
    } else if (auto* conv2 = dynamic_cast<torch::nn::Conv2dImpl*>(target)) {
      init_weight_and_bias(conv2->weight, conv2->bias, gain, bias_const);
    } else if (auto* conv3 = dynamic_cast<torch::nn::Conv3dImpl*>(target)) {
      init_weight_and_bias(conv3->weight, conv3->bias, gain, bias_const);
    }
  }
}

void pytorch_default_init(torch::nn::Module& module, bool recurrent) {
  for (const auto& child : module.modules(/*include_self=*/false)) {
    if (auto* linear = child->as<torch::nn::Linear>()) {
      linear->reset_parameters();
    } else if (auto* conv = child->as<torch::nn::Conv2d>()) {
      conv->reset_parameters();
    } else if (auto* lstm = child->as<torch::nn::LSTM>(); lstm != nullptr && recurrent) {
      lstm->reset_parameters();
    } else if (auto* gru = child->as<torch::nn::GRU>(); gru != nullptr && recurrent) {
      gru->reset_parameters();
    }
  }
}

}  // namespace concord::nn
