#include "concord/algos/gae.h"

#include <ATen/ops/addcmul.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/full_like.h>
#include <ATen/ops/where.h>
#include <c10/core/GradMode.h>

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace concord::algos {
namespace {

constexpr const char* kFn = "gae";

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

void check_unit_interval(const char* name, double x) {
  if (!(x >= 0.0 && x <= 1.0)) {
    fail(std::string(name) + " must lie in [0, 1], got " + std::to_string(x));
  }
}

at::Tensor as_bool(const at::Tensor& flags) {
  return flags.scalar_type() == at::kBool ? flags : flags.ne(0);
}

}  // namespace

GaeResult gae(const at::Tensor& rewards, const at::Tensor& values, const at::Tensor& terminated,
              const at::Tensor& truncated, const at::Tensor& bootstrap_value,
              const std::optional<at::Tensor>& truncation_values, double gamma,
              double gae_lambda) {
  if (!rewards.defined() || rewards.dim() != 2 || !rewards.is_floating_point()) {
    fail("rewards must be a [T, B] floating-point tensor, got " +
         (rewards.defined() ? describe(rewards) : std::string("an undefined tensor")));
  }
  check_like_rewards("values", values, rewards, /*is_flag=*/false);
  check_like_rewards("terminated", terminated, rewards, /*is_flag=*/true);
  check_like_rewards("truncated", truncated, rewards, /*is_flag=*/true);
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
  check_unit_interval("gamma", gamma);
  check_unit_interval("gae_lambda", gae_lambda);

  c10::NoGradGuard no_grad;
  const int64_t steps = rewards.size(0);
  if (steps == 0) return {at::empty_like(rewards), at::empty_like(rewards)};

  const at::Tensor term = as_bool(terminated);
  const at::Tensor trunc = as_bool(truncated);
  const at::Tensor ended = term.logical_or(trunc);

  // The value of the state each transition lands in, as the bootstrap target sees it.
  at::Tensor next = at::cat({values.slice(0, 1), bootstrap_value.unsqueeze(0)}, 0);
  next = truncation_values ? at::where(trunc, *truncation_values, next)
                           : next.masked_fill(trunc, 0.0);
  next.masked_fill_(term, 0.0);
  const at::Tensor delta = rewards.add(next, gamma).sub_(values);

  // A_t = delta_t + coef_t * A_{t+1}, with the recursion cut at every episode end.
  const at::Tensor coef = at::full_like(rewards, gamma * gae_lambda).masked_fill_(ended, 0.0);
  at::Tensor advantages = at::empty_like(rewards);
  advantages.select(0, steps - 1).copy_(delta.select(0, steps - 1));
  for (int64_t t = steps - 2; t >= 0; --t) {
    at::Tensor row = advantages.select(0, t);
    at::addcmul_out(row, delta.select(0, t), coef.select(0, t), advantages.select(0, t + 1));
  }
  at::Tensor returns = advantages.add(values);
  return {std::move(advantages), std::move(returns)};
}

}  // namespace concord::algos
