#include "concord/algos/fused_td_loss.h"

#include <ATen/ops/dot.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/scalar_tensor.h>
#include <ATen/ops/zeros_like.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "concord/algos/tensor_checks.h"

namespace concord::algos {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

constexpr const char* kLossFn = "fused_td_loss";

// The CPU path: one loop over the batch instead of about fifteen LibTorch operations, taken when
// every tensor is a contiguous CPU tensor of the usual dtypes (float32 values, int64 actions).
// Whether a loop can read `t` where it lies, as `type`.
bool contiguous_on_cpu(const at::Tensor& t, at::ScalarType type) {
  return t.device().is_cpu() && t.scalar_type() == type && t.is_contiguous();
}

bool loop_path(const at::Tensor& q_values, const at::Tensor& actions, const at::Tensor& targets,
               const c10::optional<at::Tensor>& weights) {
  return contiguous_on_cpu(q_values, at::kFloat) && contiguous_on_cpu(actions, at::kLong) &&
         contiguous_on_cpu(targets, at::kFloat) && (!weights || contiguous_on_cpu(*weights, at::kFloat));
}

// loss, q_taken and d loss / d q_values, computed as the operations below compute them (w / N as
// a float, the loss's terms as there), except that the loss's terms are summed in order.
struct LoopResult {
  at::Tensor loss, q_taken, gradient;
};
LoopResult td_loss_loop(const at::Tensor& q_values, const at::Tensor& actions, const at::Tensor& targets,
                        const c10::optional<at::Tensor>& weights, bool huber) {
  const int64_t n = q_values.size(0), width = q_values.size(1);
  LoopResult out;
  out.q_taken = at::empty({n}, q_values.options());
  out.gradient = at::zeros_like(q_values);
  const float* q = q_values.data_ptr<float>();
  const int64_t* a = actions.data_ptr<int64_t>();
  const float* y = targets.data_ptr<float>();
  const float* w = weights ? weights->data_ptr<float>() : nullptr;
  float* taken = out.q_taken.data_ptr<float>();
  float* gradient = out.gradient.data_ptr<float>();
  const auto scale = static_cast<float>(1.0 / static_cast<double>(n));
  float loss = 0.0F;
  for (int64_t i = 0; i < n; ++i) {
    if (a[i] < 0 || a[i] >= width) {
      tensor_checks::fail(kLossFn, "actions must lie in [0, " + std::to_string(width) + "), got " +
                                       std::to_string(a[i]) + " at " + std::to_string(i));
    }
    const float q_taken = q[i * width + a[i]];
    const float error = q_taken - y[i];
    const float weight = w ? w[i] * scale : scale;
    float slope;
    if (huber) {
      const float clamped = std::min(std::max(error, -1.0F), 1.0F);
      slope = clamped * weight;
      loss += slope * (error - 0.5F * clamped);
    } else {
      const float half_slope = error * weight;
      loss += half_slope * error;
      slope = half_slope + half_slope;
    }
    taken[i] = q_taken;
    gradient[i * width + a[i]] = slope;
  }
  out.loss = at::scalar_tensor(loss, q_values.options());
  return out;
}

struct TdLossFunction : public torch::autograd::Function<TdLossFunction> {
  // Returns {loss, q_taken}; only the loss is differentiable. Saves d loss / d q_values. The
  // weights come as an optional: LibTorch 1.13's apply() cannot take an undefined tensor.
  static variable_list forward(AutogradContext* ctx, const at::Tensor& q_values, const at::Tensor& actions,
                               const at::Tensor& targets, const c10::optional<at::Tensor>& weights, bool huber) {
    if (loop_path(q_values, actions, targets, weights)) {
      LoopResult result = td_loss_loop(q_values, actions, targets, weights, huber);
      ctx->save_for_backward({result.gradient});
      ctx->mark_non_differentiable({result.q_taken});
      ctx->set_materialize_grads(false);
      return {result.loss, result.q_taken};
    }
    const at::Tensor index = actions.unsqueeze(1);
    const at::Tensor q_taken = q_values.gather(1, index).squeeze(1);
    const at::Tensor error = q_taken - targets;
    // w / N as a tensor of the loss's dtype: a double scalar would be converted at every use.
    at::Tensor scale = at::scalar_tensor(1.0 / static_cast<double>(q_values.size(0)), error.options());
    if (weights) scale = *weights * scale;

    // Squared error: l(e) = e^2, l'(e) = 2e; the loss is the dot product of w e / N with e.
    // Huber, threshold 1: with c = clamp(e, -1, 1), l(e) = c (e - c / 2), which is e^2 / 2 inside
    // and |e| - 1/2 outside, and l'(e) = c, which is smooth_l1_loss's backward at the kinks too.
    at::Tensor loss, slope;
    if (huber) {
      const at::Tensor clamped = error.clamp(-1.0, 1.0);
      slope = clamped * scale;
      loss = at::dot(slope, at::sub(error, clamped, 0.5));
    } else {
      const at::Tensor half_slope = error * scale;
      loss = at::dot(half_slope, error);
      slope = half_slope + half_slope;
    }
    ctx->save_for_backward({at::zeros_like(q_values).scatter_(1, index, slope.unsqueeze(1))});

    variable_list out = {loss, q_taken};
    ctx->mark_non_differentiable({q_taken});
    // q_taken's gradient is never read: no zeros for it in backward.
    ctx->set_materialize_grads(false);
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    // One gradient per forward() argument: q_values', then none for the rest.
    return {ctx->get_saved_variables()[0] * grad_outputs[0], at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

TdLoss fused_td_loss(const at::Tensor& q_values, const at::Tensor& actions, const at::Tensor& targets,
                     const at::Tensor& weights, const std::string& loss) {
  if (loss != "mse" && loss != "huber") {
    tensor_checks::fail(kLossFn, "loss must be \"mse\" or \"huber\", got \"" + loss + "\"");
  }
  if (q_values.dim() != 2 || q_values.size(0) == 0 || !at::isFloatingType(q_values.scalar_type())) {
    tensor_checks::fail(kLossFn,
                        "q_values must be a non-empty floating [N, A], got " + tensor_checks::describe(q_values));
  }
  const int64_t n = q_values.size(0);
  tensor_checks::check_1d(kLossFn, "actions", actions, n);
  if (actions.scalar_type() != at::kLong) {
    tensor_checks::fail(kLossFn, "actions must be int64 action indices, got " + tensor_checks::describe(actions));
  }
  tensor_checks::check_1d(kLossFn, "targets", targets, n);
  if (weights.defined()) tensor_checks::check_1d(kLossFn, "weights", weights, n);
  const variable_list out =
      TdLossFunction::apply(q_values, actions, targets,
                            weights.defined() ? c10::optional<at::Tensor>(weights) : c10::nullopt, loss == "huber");
  return {out[0], out[1]};
}

at::Tensor max_q_targets(const at::Tensor& returns, const at::Tensor& discounts, const at::Tensor& q_next) {
  constexpr const char* kFn = "max_q_targets";
  if (q_next.dim() != 2 || q_next.size(0) == 0 || q_next.size(1) == 0 || !at::isFloatingType(q_next.scalar_type())) {
    tensor_checks::fail(kFn, "q_next must be a non-empty floating [N, A], got " + tensor_checks::describe(q_next));
  }
  const int64_t n = q_next.size(0), width = q_next.size(1);
  tensor_checks::check_1d(kFn, "returns", returns, n);
  tensor_checks::check_1d(kFn, "discounts", discounts, n);
  if (!contiguous_on_cpu(q_next, at::kFloat) || !contiguous_on_cpu(returns, at::kFloat) ||
      !contiguous_on_cpu(discounts, at::kFloat)) {
    return returns + discounts * std::get<0>(q_next.max(/*dim=*/1));
  }
  at::Tensor targets = at::empty({n}, q_next.options());
  const float* q = q_next.data_ptr<float>();
  const float* g = returns.data_ptr<float>();
  const float* discount = discounts.data_ptr<float>();
  float* y = targets.data_ptr<float>();
  for (int64_t i = 0; i < n; ++i) {
    const float* row = q + i * width;
    // max as LibTorch's: NaN wins.
    float best = row[0];
    for (int64_t a = 1; a < width && !std::isnan(best); ++a) {
      if (row[a] > best || std::isnan(row[a])) best = row[a];
    }
    y[i] = g[i] + discount[i] * best;
  }
  return targets;
}

}  // namespace concord::algos
