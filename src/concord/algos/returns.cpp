#include "concord/algos/returns.h"

#include <ATen/ops/addcmul.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/full_like.h>
#include <c10/core/GradMode.h>

#include <sstream>
#include <stdexcept>
#include <string>

namespace concord::algos {
namespace {

constexpr const char* kFn = "n_step_returns";

[[noreturn]] void fail(const std::string& message) {
  throw std::invalid_argument(std::string(kFn) + ": " + message);
}

std::string describe(const at::Tensor& t) {
  std::ostringstream out;
  out << t.sizes() << " " << t.scalar_type() << " on " << t.device();
  return out.str();
}

// `t` must match rewards in shape and device, and in dtype unless it is a flag tensor.
void check_like_rewards(const char* name, const at::Tensor& t, const at::Tensor& rewards,
                        bool is_flag) {
  if (!t.defined()) fail(std::string(name) + " is an undefined tensor");
  if (t.sizes() != rewards.sizes() || t.device() != rewards.device() ||
      (!is_flag && t.scalar_type() != rewards.scalar_type())) {
    fail(std::string(name) + " is " + describe(t) + ", expected the " +
         (is_flag ? "shape and device" : "shape, dtype and device") + " of rewards (" +
         describe(rewards) + ")");
  }
}

at::Tensor as_bool(const at::Tensor& flags) {
  return flags.scalar_type() == at::kBool ? flags : flags.ne(0);
}

}  // namespace

at::Tensor n_step_returns(const at::Tensor& rewards, const at::Tensor& terminated,
                          const at::Tensor& truncated, const at::Tensor& values,
                          const at::Tensor& bootstrap_value,
                          const std::optional<at::Tensor>& truncation_values, double gamma) {
  if (!rewards.defined() || rewards.dim() != 2 || !rewards.is_floating_point()) {
    fail("rewards must be a [T, B] floating-point tensor, got " +
         (rewards.defined() ? describe(rewards) : std::string("an undefined tensor")));
  }
  check_like_rewards("terminated", terminated, rewards, /*is_flag=*/true);
  check_like_rewards("truncated", truncated, rewards, /*is_flag=*/true);
  check_like_rewards("values", values, rewards, /*is_flag=*/false);
  if (truncation_values) {
    check_like_rewards("truncation_values", *truncation_values, rewards, /*is_flag=*/false);
  }
  const int64_t batch = rewards.size(1);
  if (!bootstrap_value.defined() || bootstrap_value.dim() != 1 ||
      bootstrap_value.size(0) != batch || bootstrap_value.device() != rewards.device() ||
      bootstrap_value.scalar_type() != rewards.scalar_type()) {
    fail("bootstrap_value is " +
         (bootstrap_value.defined() ? describe(bootstrap_value) : std::string("undefined")) +
         ", expected [" + std::to_string(batch) + "] with the dtype and device of rewards (" +
         describe(rewards) + ")");
  }
  if (!(gamma >= 0.0 && gamma <= 1.0)) {
    fail("gamma must lie in [0, 1], got " + std::to_string(gamma));
  }

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

  at::Tensor returns = at::empty_like(rewards);
  at::Tensor next = bootstrap_value;
  for (int64_t t = rewards.size(0) - 1; t >= 0; --t) {
    at::Tensor row = returns.select(0, t);
    at::addcmul_out(row, base.select(0, t), coef.select(0, t), next);
    next = row;
  }
  return returns;
}

}  // namespace concord::algos
