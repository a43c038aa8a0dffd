#include "concord/nn/fused_linear_stack.h"

#include <ATen/ops/addmm.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/tanh_backward.h>
#include <ATen/ops/threshold_backward.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/custom_function.h>

#include <cstdint>
#include <sstream>
#include <stdexcept>

namespace concord::nn {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Whether layer `l` of `layers` has an activation after it.
bool activated(int64_t l, int64_t layers, bool activate_last) { return l + 1 < layers || activate_last; }

// The forward products: every layer's output, h_1..h_L, in `outputs` when it is given.
at::Tensor forward_products(const at::Tensor& x, at::TensorList parameters, Activation activation, bool activate_last,
                            std::vector<at::Tensor>* outputs) {
  const auto layers = static_cast<int64_t>(parameters.size() / 2);
  at::Tensor h = x;
  for (int64_t l = 0; l < layers; ++l) {
    h = at::addmm(parameters[2 * l + 1], h, parameters[2 * l].t());
    if (activated(l, layers, activate_last)) {
      if (activation == Activation::kRelu) {
        h.relu_();
      } else {
        h.tanh_();
      }
    }
    if (outputs) outputs->push_back(h);
  }
  return h;
}

struct LinearStackFunction : public torch::autograd::Function<LinearStackFunction> {
  // inputs: x, W_1, b_1, ..., W_L, b_L. Saves x, h_1..h_L and W_1..W_L.
  static variable_list forward(AutogradContext* ctx, at::TensorList inputs, bool relu, bool activate_last) {
    const at::TensorList parameters = inputs.slice(1);
    std::vector<at::Tensor> saved;
    saved.reserve(inputs.size());
    saved.push_back(inputs[0]);
    const at::Tensor out =
        forward_products(inputs[0], parameters, relu ? Activation::kRelu : Activation::kTanh, activate_last, &saved);
    for (size_t l = 0; l < parameters.size() / 2; ++l) saved.push_back(parameters[2 * l]);
    ctx->save_for_backward(saved);
    ctx->saved_data["relu"] = relu;
    ctx->saved_data["activate_last"] = activate_last;
    return {out};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const variable_list saved = ctx->get_saved_variables();
    const bool relu = ctx->saved_data["relu"].toBool();
    const bool activate_last = ctx->saved_data["activate_last"].toBool();
    const auto layers = static_cast<int64_t>(saved.size() / 2);
    // saved: h_0 = x, h_1..h_L, then W_1..W_L. One gradient per input, then none for the flags.
    variable_list grads(static_cast<size_t>(2 * layers + 3));
    at::Tensor g = grad_outputs[0];
    for (int64_t l = layers - 1; l >= 0; --l) {
      const at::Tensor& output = saved[static_cast<size_t>(l + 1)];
      const at::Tensor& input = saved[static_cast<size_t>(l)];
      if (activated(l, layers, activate_last)) {
        g = relu ? at::threshold_backward(g, output, 0) : at::tanh_backward(g, output);
      }
      const auto weight_index = static_cast<size_t>(2 * l + 1);
      if (ctx->needs_input_grad(weight_index)) grads[weight_index] = at::mm(g.t(), input);
      if (ctx->needs_input_grad(weight_index + 1)) grads[weight_index + 1] = g.sum(0);
      if (l > 0 || ctx->needs_input_grad(0)) g = at::mm(g, saved[static_cast<size_t>(layers + 1 + l)]);
    }
    if (ctx->needs_input_grad(0)) grads[0] = g;
    return grads;
  }
};

[[noreturn]] void fail(const std::string& what) { throw std::invalid_argument("fused_linear_stack: " + what); }

void check(const at::Tensor& x, const std::vector<at::Tensor>& weights, const std::vector<at::Tensor>& biases) {
  if (weights.empty() || weights.size() != biases.size()) {
    std::ostringstream message;
    message << "needs one bias per weight and at least one layer, got " << weights.size() << " weights and "
            << biases.size() << " biases";
    fail(message.str());
  }
  if (x.dim() != 2) {
    std::ostringstream message;
    message << "x must be [N, in], got " << x.sizes();
    fail(message.str());
  }
  int64_t in = x.size(1);
  for (size_t l = 0; l < weights.size(); ++l) {
    const at::Tensor& w = weights[l];
    const at::Tensor& b = biases[l];
    if (w.dim() != 2 || w.size(1) != in || b.dim() != 1 || b.size(0) != w.size(0)) {
      std::ostringstream message;
      message << "layer " << l << " expects weight [out, " << in << "] and bias [out], got " << w.sizes() << " and "
              << b.sizes();
      fail(message.str());
    }
    in = w.size(0);
  }
}

}  // namespace

at::Tensor fused_linear_stack(const at::Tensor& x, const std::vector<at::Tensor>& weights,
                              const std::vector<at::Tensor>& biases, Activation activation, bool activate_last) {
  check(x, weights, biases);
  std::vector<at::Tensor> inputs;
  inputs.reserve(2 * weights.size() + 1);
  inputs.push_back(x);
  bool requires_grad = x.requires_grad();
  for (size_t l = 0; l < weights.size(); ++l) {
    inputs.push_back(weights[l]);
    inputs.push_back(biases[l]);
    requires_grad = requires_grad || weights[l].requires_grad() || biases[l].requires_grad();
  }
  if (!c10::GradMode::is_enabled() || !requires_grad) {
    return forward_products(x, at::TensorList(inputs).slice(1), activation, activate_last, nullptr);
  }
  return LinearStackFunction::apply(at::TensorList(inputs), activation == Activation::kRelu, activate_last)[0];
}

}  // namespace concord::nn
