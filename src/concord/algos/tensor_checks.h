#pragma once

// Internal to the algos layer: the argument checks that gae(), n_step_returns(), vtrace() and the
// learners' loss functions run on their tensor inputs. Every failure throws std::invalid_argument
// whose message starts with "<fn>: ", `fn` being the public function that was called, and
// describes what was expected and what was given (shape, dtype, device).

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>

namespace concord::algos::tensor_checks {

// Throws std::invalid_argument("<fn>: <message>").
[[noreturn]] void fail(const char* fn, const std::string& message);

// "[3, 2] Float on cpu": shape, dtype and device, for error messages. `t` must be defined.
std::string describe(const at::Tensor& t);

// `rewards` must be a defined [T, B] floating-point tensor; the others are checked against it.
void check_rewards(const char* fn, const at::Tensor& rewards);

// `t` must match rewards in shape and device, and in dtype unless it is a flag tensor (flags,
// such as terminated and truncated, may be bool or any number type).
void check_like_rewards(const char* fn, const char* name, const at::Tensor& t, const at::Tensor& rewards,
                        bool is_flag = false);

// Flags (see check_like_rewards) as a bool tensor: nonzero is true.
at::Tensor as_bool(const at::Tensor& flags);

// `bootstrap_value` must be [B] with the dtype and device of rewards [T, B].
void check_bootstrap_value(const char* fn, const at::Tensor& bootstrap_value, const at::Tensor& rewards);

// `x` must lie in [0, 1] (NaN does not).
void check_unit_interval(const char* fn, const char* name, double x);

// `t` must be a 1-D tensor [n]; n = -1 stands for a length that is itself wrong, and is printed
// as "N". For loss inputs, which all have the length of the first one.
void check_1d(const char* fn, const char* name, const at::Tensor& t, int64_t n);

}  // namespace concord::algos::tensor_checks
