#pragma once

#include <ATen/core/Tensor.h>

namespace concord::algos {

// The backward linear recurrence behind every discounted return and GAE:
//
//   out[t] = base[t] + coef[t] * out[t + 1]   for t = T - 1 .. 0,   out[T] = last   ([B])
//
// base and coef are [T, B] of one floating dtype and device, last is [B]. On the CPU this is one
// scalar loop over contiguous memory; elsewhere it is T row operations. Either way it is the
// only serial part of those estimators, so it sits in one place. No argument checks: callers
// (gae(), n_step_returns()) check shapes first.
at::Tensor reverse_scan(const at::Tensor& base, const at::Tensor& coef, const at::Tensor& last);

}  // namespace concord::algos
