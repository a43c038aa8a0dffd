#include "concord/algos/gae.h"

#include <ATen/ops/addcmul.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/full_like.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros_like.h>
#include <c10/core/GradMode.h>

#include <utility>

#include "concord/algos/reverse_scan.h"
#include "concord/algos/tensor_checks.h"

namespace concord::algos {
namespace {

using namespace tensor_checks;

constexpr const char* kFn = "gae";

}  // namespace

GaeResult gae(const at::Tensor& rewards, const at::Tensor& values, const at::Tensor& terminated,
              const at::Tensor& truncated, const at::Tensor& bootstrap_value,
              const std::optional<at::Tensor>& truncation_values, double gamma, double gae_lambda) {
  check_rewards(kFn, rewards);
  check_like_rewards(kFn, "values", values, rewards, /*is_flag=*/false);
  check_like_rewards(kFn, "terminated", terminated, rewards, /*is_flag=*/true);
  check_like_rewards(kFn, "truncated", truncated, rewards, /*is_flag=*/true);
  if (truncation_values) {
    check_like_rewards(kFn, "truncation_values", *truncation_values, rewards, /*is_flag=*/false);
  }
  check_bootstrap_value(kFn, bootstrap_value, rewards);
  check_unit_interval(kFn, "gamma", gamma);
  check_unit_interval(kFn, "gae_lambda", gae_lambda);

  c10::NoGradGuard no_grad;
  const int64_t steps = rewards.size(0);
  if (steps == 0) return {at::empty_like(rewards), at::empty_like(rewards)};

  const at::Tensor term = as_bool(terminated);
  const at::Tensor trunc = as_bool(truncated);
  const at::Tensor ended = term.logical_or(trunc);

  // The value of the state each transition lands in, as the bootstrap target sees it.
  at::Tensor next = at::cat({values.slice(0, 1), bootstrap_value.unsqueeze(0)}, 0);
  next = truncation_values ? at::where(trunc, *truncation_values, next) : next.masked_fill(trunc, 0.0);
  next.masked_fill_(term, 0.0);
  const at::Tensor delta = rewards.add(next, gamma).sub_(values);

  // A_t = delta_t + coef_t * A_{t+1}, with the recursion cut at every episode end.
  const at::Tensor coef = at::full_like(rewards, gamma * gae_lambda).masked_fill_(ended, 0.0);
  // A_{T-1} = delta_{T-1}: the recursion starts from zero after the last row.
  at::Tensor advantages = reverse_scan(delta, coef, at::zeros_like(bootstrap_value));
  at::Tensor returns = advantages.add(values);
  return {std::move(advantages), std::move(returns)};
}

}  // namespace concord::algos
