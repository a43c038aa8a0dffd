#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>

namespace concord::nn {

// CleanRL's `layer_init`: the weight becomes a (semi-)orthogonal matrix scaled by `gain` and every
// bias element becomes `bias_const`. For a weight W of shape [out, in] (a convolution's
// [out, in, kh, kw] is read as [out, in * kh * kw]), W W^T = gain^2 I when out <= in, and
// W^T W = gain^2 I otherwise.
//
// The gains Concord uses, after CleanRL: sqrt(2) for torso layers, 0.01 for a policy head (an
// almost uniform initial policy), 1.0 for a value head. Draws from LibTorch's global generator
// (seed it with torch::manual_seed); records no gradient.
void orthogonal_init(const torch::nn::Linear& linear, double gain, double bias_const = 0.0);

// The same, applied to `module` itself and to every Linear and Conv1d/2d/3d among its
// descendants; other modules and free parameters are left as they are.
void orthogonal_init(torch::nn::Module& module, double gain, double bias_const = 0.0);

// PyTorch's default initialisation (what a freshly built nn.Linear, nn.Conv2d, nn.LSTM or nn.GRU
// has: Kaiming-uniform weights, uniform biases in +-1/sqrt(fan_in), and +-1/sqrt(hidden) for a
// recurrent layer) for every such layer below `module` (not itself: a constructor's module has no
// shared_ptr yet); `recurrent` false leaves LSTM and GRU layers as they are.
void pytorch_default_init(torch::nn::Module& module, bool recurrent = true);

}  // namespace concord::nn
