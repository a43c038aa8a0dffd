#pragma once

#include <ATen/core/Tensor.h>

#include <optional>

namespace concord::algos {

// Discounted returns of a rollout, bootstrapped where the data stops, as A2C and PAAC use them
// as value targets.
//
// Layout (time-major, shared by returns.h and gae.h): row t of every [T, B] tensor describes
// one transition per environment b. The policy saw observation o_t, with value estimate
// values[t] = V(o_t); env.step returned reward rewards[t] and the flags terminated[t] and
// truncated[t]. The vector environment resets an episode as soon as it ends (Gymnasium's
// same-step autoreset: the default of gymnasium.vector before 1.0, AutoresetMode.SAME_STEP
// after), so after an episode end row t + 1 already holds the next episode's first
// observation, and the final observation of the finished episode is only in the step's info.
// bootstrap_value[b] = V(o_T), the value of the observation that follows the last row.
//
//   R_t = rewards[t] + gamma * N_t, where
//   N_t = 0                     if terminated[t]  (a terminal state has no future; this wins
//                                                  when both flags are set)
//       = truncation_values[t]  if truncated[t]   (the caller computes it as V(final
//                                                  observation of the truncated episode))
//       = R_{t+1}               otherwise, for t < T - 1
//       = bootstrap_value       otherwise, for t = T - 1
//
// truncation_values is read only where truncated[t] is set and terminated[t] is not; other
// entries are ignored and may hold anything (NaN included). Without truncation_values a
// truncation is treated like a termination (no bootstrap), which is what CleanRL does with
// done = terminated | truncated; this biases the targets of truncated episodes downwards.
//
// Shapes and types: rewards, values and truncation_values are [T, B] float tensors of one
// dtype; terminated and truncated are [T, B] bool tensors or tensors of any dtype where
// nonzero means set; bootstrap_value is [B]. All live on one device, which may be any device.
// values[t] does not enter the recursion above; it is accepted, and checked, so that this
// function takes the same inputs as gae(). Returns a new [T, B] tensor with the dtype and
// device of rewards that does not require grad (the recursion runs under NoGradGuard), since
// returns are regression targets. T may be 0. gamma must lie in [0, 1]. Throws
// std::invalid_argument, naming the offending shapes, dtypes, devices or values.
at::Tensor n_step_returns(const at::Tensor& rewards, const at::Tensor& terminated, const at::Tensor& truncated,
                          const at::Tensor& values, const at::Tensor& bootstrap_value,
                          const std::optional<at::Tensor>& truncation_values, double gamma);

}  // namespace concord::algos
