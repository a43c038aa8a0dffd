#include "concord/algos/fused_ppo_loss.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <torch/csrc/autograd/custom_function.h>

#include <cmath>
#include <cstdint>

namespace concord::algos {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

constexpr const char* kLossFn = "fused_ppo_loss";

// The loss's sums and its gradients, in one pass over the minibatch: for float32 contiguous CPU
// inputs the forward below is about 150 LibTorch operations (with their conversions and
// temporaries), a third of a CartPole minibatch step's time, for 128 elements. The same formulas
// term by term in float32, the sums accumulated in double (LibTorch sums float32 in float32 in
// another order: the results differ in rounding only). NaN-free inputs assumed for the choices
// of side, as the comparisons below make them.
struct LossSums {
  double pg = 0.0, v = 0.0, entropy = 0.0, log_ratio = 0.0, kl = 0.0, clipped = 0.0;
};

LossSums loss_pass(const float* new_log_probs, const float* old_log_probs, const float* advantages,
                   const float* new_values, const float* old_values, const float* returns, const float* entropy,
                   int64_t n, double clip_coef, bool clip_vloss, double vf_coef, float* d_log_probs, float* d_values) {
  const auto inv_n = 1.0 / static_cast<double>(n);
  // As LibTorch converts double scalars for float32 tensors.
  const auto low = static_cast<float>(1.0 - clip_coef), high = static_cast<float>(1.0 + clip_coef);
  const auto clip = static_cast<float>(clip_coef);
  const auto d_log_prob_scale = static_cast<float>(-inv_n), d_value_scale = static_cast<float>(vf_coef * inv_n);
  LossSums sums;
  for (int64_t i = 0; i < n; ++i) {
    const float log_ratio = new_log_probs[i] - old_log_probs[i];
    const float ratio = std::exp(log_ratio);
    const float surrogate = advantages[i] * ratio;
    const float clipped_surrogate = advantages[i] * std::fmin(std::fmax(ratio, low), high);
    sums.pg += std::fmin(surrogate, clipped_surrogate);
    d_log_probs[i] = surrogate > clipped_surrogate ? 0.0F : surrogate * d_log_prob_scale;

    const float error = new_values[i] - returns[i];
    const float unclipped = error * error;
    if (clip_vloss) {
      const float delta = new_values[i] - old_values[i];
      const float clipped_error = std::fmin(std::fmax(delta, -clip), clip) + old_values[i] - returns[i];
      const float clipped = clipped_error * clipped_error;
      sums.v += std::fmax(unclipped, clipped);
      d_values[i] = (unclipped < clipped ? (std::fabs(delta) > clip ? 0.0F : clipped_error) : error) * d_value_scale;
    } else {
      sums.v += unclipped;
      d_values[i] = error * d_value_scale;
    }
    sums.entropy += entropy[i];
    sums.log_ratio += log_ratio;
    sums.kl += (ratio - 1.0F) - log_ratio;
    sums.clipped += std::fabs(ratio - 1.0F) > clip ? 1.0 : 0.0;
  }
  return sums;
}

bool one_pass(at::TensorList inputs) {
  for (const at::Tensor& t : inputs) {
    if (!(t.device().is_cpu() && t.scalar_type() == at::kFloat && t.is_contiguous())) return false;
  }
  return inputs[0].numel() > 0;
}

at::Tensor scalar(double value, const at::Tensor& like) {
  at::Tensor out = at::empty({}, like.options());
  *out.data_ptr<float>() = static_cast<float>(value);
  return out;
}

struct PpoLossFunction : public torch::autograd::Function<PpoLossFunction> {
  // Returns {loss, policy_loss, value_loss, entropy, old_approx_kl, approx_kl, clipfrac}; only the
  // loss is differentiable. Runs without recording (custom functions' forward always does), and
  // saves d loss / d input for the three differentiable inputs.
  static variable_list forward(AutogradContext* ctx, const at::Tensor& new_log_probs, const at::Tensor& new_values,
                               const at::Tensor& entropy, const at::Tensor& old_log_probs, const at::Tensor& advantages,
                               const at::Tensor& old_values, const at::Tensor& returns, double clip_coef,
                               bool clip_vloss, double ent_coef, double vf_coef) {
    const double inv_n = 1.0 / static_cast<double>(new_log_probs.size(0));
    // Only the loss is differentiated: its six diagnostics' gradients would otherwise be
    // materialised as zeros (twelve operations) for backward to ignore.
    ctx->set_materialize_grads(false);
    if (one_pass({new_log_probs, new_values, entropy, old_log_probs, advantages, old_values, returns})) {
      at::Tensor d_log_probs = at::empty_like(new_log_probs);
      at::Tensor d_values = at::empty_like(new_values);
      const LossSums sums =
          loss_pass(new_log_probs.data_ptr<float>(), old_log_probs.data_ptr<float>(), advantages.data_ptr<float>(),
                    new_values.data_ptr<float>(), old_values.data_ptr<float>(), returns.data_ptr<float>(),
                    entropy.data_ptr<float>(), new_log_probs.size(0), clip_coef, clip_vloss, vf_coef,
                    d_log_probs.data_ptr<float>(), d_values.data_ptr<float>());
      const double pg_loss = -sums.pg * inv_n, v_loss = 0.5 * sums.v * inv_n, entropy_mean = sums.entropy * inv_n;
      ctx->save_for_backward({d_log_probs, d_values});
      ctx->saved_data["d_entropy"] = -ent_coef * inv_n;
      variable_list out = {scalar(pg_loss - ent_coef * entropy_mean + vf_coef * v_loss, new_log_probs),
                           scalar(pg_loss, new_log_probs),
                           scalar(v_loss, new_log_probs),
                           scalar(entropy_mean, new_log_probs),
                           scalar(-sums.log_ratio * inv_n, new_log_probs),
                           scalar(sums.kl * inv_n, new_log_probs),
                           scalar(sums.clipped * inv_n, new_log_probs)};
      ctx->mark_non_differentiable({out.begin() + 1, out.end()});
      return out;
    }
    const at::Tensor logratio = new_log_probs - old_log_probs;
    const at::Tensor ratio = logratio.exp();

    // Policy loss mean(max(-A r, -A clip(r))) = -mean(min(A r, A clip(r))). Its derivative in
    // r is -A where A r is the smaller side, and 0 where the clipped side is smaller, since
    // clip(r) is then constant. The sides tie exactly where r lies inside the clip range (or
    // A = 0), and there maximum()'s half-and-half split and clamp()'s pass-through add up to -A
    // too. Through r = exp(log pi - log pi_old), d/d log pi = r * d/d r = -(A r) * [A r <= A clip(r)].
    const at::Tensor surrogate = advantages * ratio;
    const at::Tensor clipped_surrogate = advantages * ratio.clamp(1.0 - clip_coef, 1.0 + clip_coef);
    const at::Tensor pg_loss = surrogate.minimum(clipped_surrogate).sum().mul_(-inv_n);
    const at::Tensor d_log_probs = surrogate.masked_fill(surrogate.gt(clipped_surrogate), 0.0).mul_(-inv_n);

    // Value loss 0.5 * mean((v - R)^2), or with clip_vloss 0.5 * mean(max((v - R)^2, (v_clip - R)^2))
    // where v_clip = v_old + clip(v - v_old). The derivative follows the larger error: (v - R)
    // from the unclipped side; from the clipped side (v_clip - R) where v - v_old lies inside the
    // clip range (clamp() passes the gradient there), else 0. Inside the range the two errors are
    // equal but for rounding (v_old + (v - v_old) need not be v), so the side is chosen by the
    // same comparison LibTorch's maximum() makes. (Where they tie exactly, maximum() would give
    // half of each side's, which is the same value inside the range; outside it, a set of measure
    // zero, this takes the unclipped side's.)
    const at::Tensor error = new_values - returns;
    const at::Tensor v_loss_unclipped = error.square();
    at::Tensor v_loss, d_values;
    if (clip_vloss) {
      const at::Tensor delta = new_values - old_values;
      const at::Tensor clipped_error = delta.clamp(-clip_coef, clip_coef).add_(old_values).sub_(returns);
      const at::Tensor v_loss_clipped = clipped_error.square();
      v_loss = v_loss_unclipped.maximum(v_loss_clipped).sum().mul_(0.5 * inv_n);
      d_values = at::where(v_loss_unclipped.lt(v_loss_clipped),
                           clipped_error.masked_fill(delta.abs().gt(clip_coef), 0.0), error)
                     .mul_(vf_coef * inv_n);
    } else {
      v_loss = v_loss_unclipped.sum().mul_(0.5 * inv_n);
      d_values = error.mul(vf_coef * inv_n);
    }

    const at::Tensor entropy_mean = entropy.sum().mul_(inv_n);
    const at::Tensor loss = pg_loss.sub(entropy_mean, ent_coef).add_(v_loss, vf_coef);

    ctx->save_for_backward({d_log_probs, d_values});
    ctx->saved_data["d_entropy"] = -ent_coef * inv_n;

    // Means as sum * (1 / N): LibTorch's mean() dispatches several times more operations.
    // Diagnostics: how far the policy moved (http://joschu.net/blog/kl-approx.html).
    const at::Tensor ratio_minus_one = ratio - 1.0;
    const at::Tensor old_approx_kl = logratio.sum().mul_(-inv_n);
    const at::Tensor approx_kl = (ratio_minus_one - logratio).sum().mul_(inv_n);
    const at::Tensor clipfrac = ratio_minus_one.abs().gt_(clip_coef).sum().mul_(inv_n);
    variable_list out = {loss, pg_loss, v_loss, entropy_mean, old_approx_kl, approx_kl, clipfrac};
    ctx->mark_non_differentiable({out.begin() + 1, out.end()});
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const variable_list saved = ctx->get_saved_variables();
    const at::Tensor& grad = grad_outputs[0];
    const at::Tensor d_log_probs = saved[0] * grad;
    const at::Tensor d_values = saved[1] * grad;
    const at::Tensor d_entropy = (grad * ctx->saved_data["d_entropy"].toDouble()).expand_as(saved[0]);
    // One gradient per forward() argument: the three differentiable inputs, then none for the rest.
    return {d_log_probs,  d_values,     d_entropy,    at::Tensor(), at::Tensor(), at::Tensor(),
            at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

PpoLoss fused_ppo_loss(const at::Tensor& new_log_probs, const at::Tensor& old_log_probs, const at::Tensor& advantages,
                       const at::Tensor& new_values, const at::Tensor& old_values, const at::Tensor& returns,
                       const at::Tensor& entropy, double clip_coef, bool clip_vloss, double ent_coef, double vf_coef) {
  check_ppo_loss_inputs(kLossFn, new_log_probs, old_log_probs, advantages, new_values, old_values, returns, entropy);
  const variable_list out = PpoLossFunction::apply(new_log_probs, new_values, entropy, old_log_probs, advantages,
                                                   old_values, returns, clip_coef, clip_vloss, ent_coef, vf_coef);
  PpoLoss loss;
  loss.loss = out[0];
  loss.policy_loss = out[1];
  loss.value_loss = out[2];
  loss.entropy = out[3];
  loss.old_approx_kl = out[4];
  loss.approx_kl = out[5];
  loss.clipfrac = out[6];
  return loss;
}

}  // namespace concord::algos
