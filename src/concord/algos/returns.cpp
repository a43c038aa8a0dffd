#include "concord/algos/returns.h"

#include <ATen/ops/addcmul.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/full_like.h>
#include <c10/core/GradMode.h>

#include "concord/algos/reverse_scan.h"
#include "concord/algos/tensor_checks.h"

namespace concord::algos {
namespace {

using namespace tensor_checks;

constexpr const char* kFn = "n_step_returns";

}  // namespace

at::Tensor n_step_returns(const at::Tensor& rewards, const at::Tensor& terminated, const at::Tensor& truncated,
                          const at::Tensor& values, const at::Tensor& bootstrap_value,
                          const std::optional<at::Tensor>& truncation_values, double gamma) {
  check_rewards(kFn, rewards);
  check_like_rewards(kFn, "terminated", terminated, rewards, /*is_flag=*/true);
  check_like_rewards(kFn, "truncated", truncated, rewards, /*is_flag=*/true);
  check_like_rewards(kFn, "values", values, rewards, /*is_flag=*/false);
  if (truncation_values) {
    check_like_rewards(kFn, "truncation_values", *truncation_values, rewards, /*is_flag=*/false);
  }
  check_bootstrap_value(kFn, bootstrap_value, rewards);
  check_unit_interval(kFn, "gamma", gamma);

  c10::NoGradGuard no_grad;
  const at::Tensor term = as_bool(terminated);
  const at::Tensor ended = term.logical_or(as_bool(truncated));

  // R_t = base_t + coef_t * R_{t+1}: base carries the reward and, on truncation, the discounted
  // value of the final observation; coef cuts the recursion at every episode end.
  at::Tensor base = rewards.clone();
  if (truncation_values) {
    const at::Tensor bootstrapped = ended.logical_and(term.logical_not());
    base.add_(truncation_values->masked_fill(bootstrapped.logical_not(), 0.0), gamma);
  }
  const at::Tensor coef = at::full_like(rewards, gamma).masked_fill_(ended, 0.0);

  return reverse_scan(base, coef, bootstrap_value);
}

}  // namespace concord::algos
