#include "concord/nn/fused_linear_stack.h"

#include <ATen/ops/addmm.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/tanh_backward.h>
#include <ATen/ops/threshold_backward.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/custom_function.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "concord/core/blas.h"
#include "concord/nn/fast_math.h"

namespace concord::nn {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Whether layer `l` of `layers` has an activation after it.
bool activated(int64_t l, int64_t layers, bool activate_last) { return l + 1 < layers || activate_last; }

// The CPU path: each product one CBLAS call on the tensors' memory, and the bias, relu and their
// gradients plain loops, so that a layer costs LibTorch only the allocation of its result. Taken
// for non-empty float32 contiguous CPU tensors when the process's BLAS exports CBLAS. LibTorch's
// addmm and mm reach the same BLAS routine; what differs is rounding: the bias is added to the
// finished product (addmm accumulates the product onto it), the bias's gradient sums the rows in
// order, and tanh is this file's own (within 1.52 units in the last place of the exact value where
// LibTorch's is within 1, and a twentieth of its cost: it was the largest single symbol of a PPO
// update's profile).
bool blas_path(const at::Tensor& x, at::TensorList parameters) {
  if (core::cblas_sgemm() == nullptr) return false;
  const auto fits = [](const at::Tensor& t) {
    return t.device().is_cpu() && t.scalar_type() == at::kFloat && t.is_contiguous() && t.numel() > 0 &&
           t.numel() <= std::numeric_limits<int>::max();
  };
  if (!fits(x)) return false;
  for (const at::Tensor& p : parameters) {
    if (!fits(p)) return false;
  }
  return true;
}

int to_int(int64_t size) { return static_cast<int>(size); }  // blas_path bounds every size

// y[i, :] += b, then the activation if asked (kNone: none), over the rows of y [n, out]. For relu,
// v < 0 rather than !(v > 0): NaN stays NaN, as LibTorch's relu leaves it.
enum class RowActivation { kNone, kRelu, kTanh };
CONCORD_VECTOR_CLONES void add_bias_rows(float* y, const float* b, int64_t n, int64_t out, RowActivation act) {
  for (int64_t i = 0; i < n; ++i) {
    float* row = y + i * out;
    if (act == RowActivation::kRelu) {
      for (int64_t j = 0; j < out; ++j) {
        const float v = row[j] + b[j];
        row[j] = v < 0.0F ? 0.0F : v;
      }
    } else if (act == RowActivation::kTanh) {
      for (int64_t j = 0; j < out; ++j) row[j] = tanh_float(row[j] + b[j]);
    } else {
      for (int64_t j = 0; j < out; ++j) row[j] += b[j];
    }
  }
}

// scaled = g (1 - h^2) (tanh's derivative at its output h, as tanh_backward gives it) and
// sum = sum_i scaled[i, :], in one pass over g, h [n, out].
CONCORD_VECTOR_CLONES void tanh_backward_rows(const float* g, const float* h, float* scaled, float* sum, int64_t n,
                                              int64_t out) {
  for (int64_t j = 0; j < out; ++j) sum[j] = 0.0F;
  for (int64_t i = 0; i < n; ++i) {
    const float* g_row = g + i * out;
    const float* h_row = h + i * out;
    float* s_row = scaled + i * out;
    for (int64_t j = 0; j < out; ++j) {
      const float v = g_row[j] * (1.0F - h_row[j] * h_row[j]);
      s_row[j] = v;
      sum[j] += v;
    }
  }
}

// masked = 0 where h <= 0, else g (relu's derivative at its output h, as threshold_backward
// gives it: NaN lets the gradient through), and sum = sum_i masked[i, :], in one pass over g, h
// [n, out]. Both loads are unconditional, so the loop vectorises without a branch, which random
// masks would mispredict half the time.
CONCORD_VECTOR_CLONES void relu_backward_rows(const float* g, const float* h, float* masked, float* sum, int64_t n,
                                              int64_t out) {
  for (int64_t j = 0; j < out; ++j) sum[j] = 0.0F;
  for (int64_t i = 0; i < n; ++i) {
    const float* g_row = g + i * out;
    const float* h_row = h + i * out;
    float* m_row = masked + i * out;
    for (int64_t j = 0; j < out; ++j) {
      const float grad = g_row[j];
      const float m = h_row[j] <= 0.0F ? 0.0F : grad;
      m_row[j] = m;
      sum[j] += m;
    }
  }
}

// sum = sum_i g[i, :] over g [n, out].
CONCORD_VECTOR_CLONES void row_sum(const float* g, float* sum, int64_t n, int64_t out) {
  for (int64_t j = 0; j < out; ++j) sum[j] = 0.0F;
  for (int64_t i = 0; i < n; ++i) {
    const float* row = g + i * out;
    for (int64_t j = 0; j < out; ++j) sum[j] += row[j];
  }
}

// op(a) op(b) as a new row-major tensor, op transposing where asked: a one-call cblas_sgemm.
at::Tensor blas_product(const at::Tensor& a, bool transpose_a, const at::Tensor& b, bool transpose_b) {
  const int m = to_int(a.size(transpose_a ? 1 : 0)), k = to_int(a.size(transpose_a ? 0 : 1));
  const int n = to_int(b.size(transpose_b ? 0 : 1));
  at::Tensor c = at::empty({m, n}, a.options());
  core::cblas_sgemm()(core::kCblasRowMajor, transpose_a ? core::kCblasTrans : core::kCblasNoTrans,
                      transpose_b ? core::kCblasTrans : core::kCblasNoTrans, m, n, k, 1.0F, a.data_ptr<float>(),
                      to_int(a.size(1)), b.data_ptr<float>(), to_int(b.size(1)), 0.0F, c.data_ptr<float>(), n);
  return c;
}

// h W^T + b, then the activation, for h [n, in] and W [out, in].
at::Tensor blas_layer(const at::Tensor& h, const at::Tensor& weight, const at::Tensor& bias, bool activate,
                      Activation activation) {
  at::Tensor y = blas_product(h, /*transpose_a=*/false, weight, /*transpose_b=*/true);
  const RowActivation act = !activate                         ? RowActivation::kNone
                            : activation == Activation::kRelu ? RowActivation::kRelu
                                                              : RowActivation::kTanh;
  add_bias_rows(y.data_ptr<float>(), bias.data_ptr<float>(), y.size(0), y.size(1), act);
  return y;
}

// The forward products, on the CPU path when `blas` (blas_path's answer): every layer's output,
// h_1..h_L, in `outputs` when it is given.
at::Tensor forward_products(const at::Tensor& x, at::TensorList parameters, Activation activation, bool activate_last,
                            bool blas, std::vector<at::Tensor>* outputs) {
  const auto layers = static_cast<int64_t>(parameters.size() / 2);
  at::Tensor h = x;
  for (int64_t l = 0; l < layers; ++l) {
    const bool activate = activated(l, layers, activate_last);
    if (blas) {
      h = blas_layer(h, parameters[2 * l], parameters[2 * l + 1], activate, activation);
    } else {
      h = at::addmm(parameters[2 * l + 1], h, parameters[2 * l].t());
      if (activate) {
        if (activation == Activation::kRelu) {
          h.relu_();
        } else {
          h.tanh_();
        }
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
    const bool blas = blas_path(inputs[0], parameters);
    const at::Tensor out = forward_products(inputs[0], parameters, relu ? Activation::kRelu : Activation::kTanh,
                                            activate_last, blas, &saved);
    for (size_t l = 0; l < parameters.size() / 2; ++l) saved.push_back(parameters[2 * l]);
    ctx->save_for_backward(saved);
    ctx->saved_data["relu"] = relu;
    ctx->saved_data["activate_last"] = activate_last;
    ctx->saved_data["blas"] = blas;
    return {out};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const variable_list saved = ctx->get_saved_variables();
    const bool relu = ctx->saved_data["relu"].toBool();
    const bool activate_last = ctx->saved_data["activate_last"].toBool();
    const auto layers = static_cast<int64_t>(saved.size() / 2);
    // saved: h_0 = x, h_1..h_L, then W_1..W_L. One gradient per input, then none for the flags.
    // The CPU path only for a gradient it can read as it is: float32, contiguous (a sum's
    // backward hands over an expanded one).
    const at::Tensor& grad_out = grad_outputs[0];
    const bool blas = ctx->saved_data["blas"].toBool() && grad_out.scalar_type() == at::kFloat;
    variable_list grads(static_cast<size_t>(2 * layers + 3));
    at::Tensor g = blas ? grad_out.contiguous() : grad_out;
    for (int64_t l = layers - 1; l >= 0; --l) {
      const at::Tensor& output = saved[static_cast<size_t>(l + 1)];
      const at::Tensor& input = saved[static_cast<size_t>(l)];
      const at::Tensor& weight = saved[static_cast<size_t>(layers + 1 + l)];
      const auto weight_index = static_cast<size_t>(2 * l + 1);
      const bool activate = activated(l, layers, activate_last);
      // g becomes this layer's pre-activation gradient, with the bias's gradient its column sum.
      at::Tensor bias_grad;
      if (blas) {
        bias_grad = at::empty({g.size(1)}, g.options());
        if (activate) {
          at::Tensor scaled = at::empty_like(g);
          (relu ? relu_backward_rows : tanh_backward_rows)(g.data_ptr<float>(), output.data_ptr<float>(),
                                                           scaled.data_ptr<float>(), bias_grad.data_ptr<float>(),
                                                           g.size(0), g.size(1));
          g = scaled;
        } else {
          row_sum(g.data_ptr<float>(), bias_grad.data_ptr<float>(), g.size(0), g.size(1));
        }
      } else {
        if (activate) g = relu ? at::threshold_backward(g, output, 0) : at::tanh_backward(g, output);
        if (ctx->needs_input_grad(weight_index + 1)) bias_grad = g.sum(0);
      }
      if (ctx->needs_input_grad(weight_index)) {
        // dW = g^T h_{l-1}
        grads[weight_index] = blas ? blas_product(g, true, input, false) : at::mm(g.t(), input);
      }
      if (ctx->needs_input_grad(weight_index + 1)) grads[weight_index + 1] = bias_grad;
      // g_{l-1} = g W
      if (l > 0 || ctx->needs_input_grad(0)) g = blas ? blas_product(g, false, weight, false) : at::mm(g, weight);
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
    const at::TensorList parameters = at::TensorList(inputs).slice(1);
    return forward_products(x, parameters, activation, activate_last, blas_path(x, parameters), nullptr);
  }
  return LinearStackFunction::apply(at::TensorList(inputs), activation == Activation::kRelu, activate_last)[0];
}

}  // namespace concord::nn
