#include "concord/algos/vtrace.h"

#include <ATen/ops/addcmul.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty_like.h>
#include <c10/core/GradMode.h>

#include <string>
#include <utility>

#include "concord/algos/tensor_checks.h"

namespace concord::algos {
namespace {

using namespace tensor_checks;

constexpr const char* kFn = "vtrace";

// Appends bootstrap_value [B] as row T to the rows 1..T-1 of x [T, B]: x shifted one step ahead.
at::Tensor shifted(const at::Tensor& x, const at::Tensor& bootstrap_value) {
  return at::cat({x.slice(0, 1), bootstrap_value.unsqueeze(0)}, 0);
}

}  // namespace

VTraceResult vtrace(const at::Tensor& behaviour_log_probs, const at::Tensor& target_log_probs,
                    const at::Tensor& rewards, const at::Tensor& values, const at::Tensor& bootstrap_value,
                    const at::Tensor& discounts, double rho_bar, double c_bar) {
  check_rewards(kFn, rewards);
  check_like_rewards(kFn, "behaviour_log_probs", behaviour_log_probs, rewards);
  check_like_rewards(kFn, "target_log_probs", target_log_probs, rewards);
  check_like_rewards(kFn, "values", values, rewards);
  check_like_rewards(kFn, "discounts", discounts, rewards);
  check_bootstrap_value(kFn, bootstrap_value, rewards);
  if (!(rho_bar > 0.0)) fail(kFn, "rho_bar must be positive, got " + std::to_string(rho_bar));
  if (!(c_bar > 0.0)) fail(kFn, "c_bar must be positive, got " + std::to_string(c_bar));

  c10::NoGradGuard no_grad;
  const int64_t steps = rewards.size(0);
  if (steps == 0) return {at::empty_like(rewards), at::empty_like(rewards)};

  const at::Tensor ratios = target_log_probs.sub(behaviour_log_probs).exp_();
  const at::Tensor clipped_rhos = ratios.clamp_max(rho_bar);
  const at::Tensor trace_coef = ratios.clamp_max(c_bar).mul_(discounts);
  const at::Tensor deltas =
      rewards.addcmul(discounts, shifted(values, bootstrap_value)).sub_(values).mul_(clipped_rhos);

  // v_t - V_t = delta_t + discounts[t] * c_t * (v_{t+1} - V_{t+1}), with v_T - V_T = 0.
  at::Tensor vs = at::empty_like(rewards);
  vs.select(0, steps - 1).copy_(deltas.select(0, steps - 1));
  for (int64_t t = steps - 2; t >= 0; --t) {
    at::Tensor row = vs.select(0, t);
    at::addcmul_out(row, deltas.select(0, t), trace_coef.select(0, t), vs.select(0, t + 1));
  }
  vs.add_(values);

  at::Tensor pg_advantages = rewards.addcmul(discounts, shifted(vs, bootstrap_value)).sub_(values).mul_(clipped_rhos);
  return {std::move(vs), std::move(pg_advantages)};
}

}  // namespace concord::algos
