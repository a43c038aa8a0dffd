#pragma once

#include <ATen/core/Tensor.h>

#include <optional>

namespace concord::algos {

// The output of gae(): both [T, B], with the dtype and device of rewards.
struct GaeResult {
  at::Tensor advantages;  // A_t
  at::Tensor returns;     // A_t + values[t], the value targets of PPO and A2C
};

// Generalised Advantage Estimation (Schulman et al., 2016) over a time-major rollout.
//
// The layout is the one described in returns.h: row t holds V(o_t) = values[t], the reward and
// the terminated / truncated flags that env.step returned for it, with Gymnasium's same-step
// autoreset (after an episode end, row t + 1 is the next episode's first observation);
// bootstrap_value[b] = V(o_T) follows the last row.
//
//   next_t  = 0                     if terminated[t]  (wins when both flags are set)
//           = truncation_values[t]  if truncated[t]   (V(final observation), from the caller)
//           = values[t + 1]         otherwise, for t < T - 1
//           = bootstrap_value       otherwise, for t = T - 1
//   delta_t = rewards[t] + gamma * next_t - values[t]
//   A_t     = delta_t                                   if terminated[t] or truncated[t],
//                                                       or t = T - 1
//           = delta_t + gamma * lambda * A_{t+1}        otherwise
//
// So the lambda recursion never crosses an episode end, and a truncated step still credits the
// discounted value of the state it was cut off in. With gae_lambda = 1, returns equal
// n_step_returns() on the same inputs; with gae_lambda = 0, advantages equal delta_t.
//
// Without truncation_values a truncation is handled as CleanRL does (done = terminated |
// truncated, next_t = 0): the truncated step gets no bootstrap. This is the documented choice
// for callers that cannot evaluate final observations; it biases their targets downwards.
// truncation_values is read only where truncated[t] is set and terminated[t] is not; other
// entries are ignored and may hold anything (NaN included).
//
// Shapes and types: rewards, values and truncation_values are [T, B] float tensors of one
// dtype; terminated and truncated are [T, B] bool tensors or tensors of any dtype where
// nonzero means set; bootstrap_value is [B]. All live on one device, which may be any device.
// The results are new tensors that do not require grad (computed under NoGradGuard). T may be
// 0. gamma and gae_lambda must lie in [0, 1]. Throws std::invalid_argument, naming the
// offending shapes, dtypes, devices or values.
GaeResult gae(const at::Tensor& rewards, const at::Tensor& values, const at::Tensor& terminated,
              const at::Tensor& truncated, const at::Tensor& bootstrap_value,
              const std::optional<at::Tensor>& truncation_values, double gamma, double gae_lambda);

}  // namespace concord::algos
