#include "concord/algos/vtrace.h"

#include <ATen/ops/addcmul.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty_like.h>
#include <c10/core/GradMode.h>

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace concord::algos {
namespace {

constexpr const char* kFn = "vtrace";

[[noreturn]] void fail(const std::string& message) {
  throw std::invalid_argument(std::string(kFn) + ": " + message);
}

std::string describe(const at::Tensor& t) {
  std::ostringstream out;
  out << t.sizes() << " " << t.scalar_type() << " on " << t.device();
  return out.str();
}

void check_like_rewards(const char* name, const at::Tensor& t, const at::Tensor& rewards) {
  if (!t.defined()) fail(std::string(name) + " is an undefined tensor");
  if (t.sizes() != rewards.sizes() || t.device() != rewards.device() ||
      t.scalar_type() != rewards.scalar_type()) {
    fail(std::string(name) + " is " + describe(t) +
         ", expected the shape, dtype and device of rewards (" + describe(rewards) + ")");
  }
}

// Appends bootstrap_value [B] as row T to the rows 1..T-1 of x [T, B]: x shifted one step ahead.
at::Tensor shifted(const at::Tensor& x, const at::Tensor& bootstrap_value) {
  return at::cat({x.slice(0, 1), bootstrap_value.unsqueeze(0)}, 0);
}

}  // namespace

VTraceResult vtrace(const at::Tensor& behaviour_log_probs, const at::Tensor& target_log_probs,
                    const at::Tensor& rewards, const at::Tensor& values,
                    const at::Tensor& bootstrap_value, const at::Tensor& discounts,
                    double rho_bar, double c_bar) {
  if (!rewards.defined() || rewards.dim() != 2 || !rewards.is_floating_point()) {
    fail("rewards must be a [T, B] floating-point tensor, got " +
         (rewards.defined() ? describe(rewards) : std::string("an undefined tensor")));
  }
  check_like_rewards("behaviour_log_probs", behaviour_log_probs, rewards);
  check_like_rewards("target_log_probs", target_log_probs, rewards);
  check_like_rewards("values", values, rewards);
  check_like_rewards("discounts", discounts, rewards);
  const int64_t batch = rewards.size(1);
  if (!bootstrap_value.defined() || bootstrap_value.dim() != 1 ||
      bootstrap_value.size(0) != batch || bootstrap_value.device() != rewards.device() ||
      bootstrap_value.scalar_type() != rewards.scalar_type()) {
    fail("bootstrap_value is " +
         (bootstrap_value.defined() ? describe(bootstrap_value) : std::string("undefined")) +
         ", expected [" + std::to_string(batch) + "] with the dtype and device of rewards (" +
         describe(rewards) + ")");
  }
  if (!(rho_bar > 0.0)) fail("rho_bar must be positive, got " + std::to_string(rho_bar));
  if (!(c_bar > 0.0)) fail("c_bar must be positive, got " + std::to_string(c_bar));

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

  at::Tensor pg_advantages =
      rewards.addcmul(discounts, shifted(vs, bootstrap_value)).sub_(values).mul_(clipped_rhos);
  return {std::move(vs), std::move(pg_advantages)};
}

}  // namespace concord::algos
