#include "concord/algos/tensor_checks.h"

#include <sstream>
#include <stdexcept>

namespace concord::algos::tensor_checks {

void fail(const char* fn, const std::string& message) { throw std::invalid_argument(std::string(fn) + ": " + message); }

std::string describe(const at::Tensor& t) {
  std::ostringstream out;
  out << t.sizes() << " " << t.scalar_type() << " on " << t.device();
  return out.str();
}

void check_rewards(const char* fn, const at::Tensor& rewards) {
  if (!rewards.defined() || rewards.dim() != 2 || !rewards.is_floating_point()) {
    fail(fn, "rewards must be a [T, B] floating-point tensor, got " +
                 (rewards.defined() ? describe(rewards) : std::string("an undefined tensor")));
  }
}

void check_like_rewards(const char* fn, const char* name, const at::Tensor& t, const at::Tensor& rewards,
                        bool is_flag) {
  if (!t.defined()) fail(fn, std::string(name) + " is an undefined tensor");
  if (t.sizes() != rewards.sizes() || t.device() != rewards.device() ||
      (!is_flag && t.scalar_type() != rewards.scalar_type())) {
    fail(fn, std::string(name) + " is " + describe(t) + ", expected the " +
                 (is_flag ? "shape and device" : "shape, dtype and device") + " of rewards (" + describe(rewards) +
                 ")");
  }
}

at::Tensor as_bool(const at::Tensor& flags) { return flags.scalar_type() == at::kBool ? flags : flags.ne(0); }

void check_bootstrap_value(const char* fn, const at::Tensor& bootstrap_value, const at::Tensor& rewards) {
  const int64_t batch = rewards.size(1);
  if (!bootstrap_value.defined() || bootstrap_value.dim() != 1 || bootstrap_value.size(0) != batch ||
      bootstrap_value.device() != rewards.device() || bootstrap_value.scalar_type() != rewards.scalar_type()) {
    fail(fn, "bootstrap_value is " +
                 (bootstrap_value.defined() ? describe(bootstrap_value) : std::string("undefined")) + ", expected [" +
                 std::to_string(batch) + "] with the dtype and device of rewards (" + describe(rewards) + ")");
  }
}

void check_unit_interval(const char* fn, const char* name, double x) {
  if (!(x >= 0.0 && x <= 1.0)) {
    fail(fn, std::string(name) + " must lie in [0, 1], got " + std::to_string(x));
  }
}

void check_1d(const char* fn, const char* name, const at::Tensor& t, int64_t n) {
  if (t.defined() && t.dim() == 1 && t.size(0) == n) return;
  std::ostringstream out;
  out << fn << ": " << name << " must be a 1-D tensor [" << (n >= 0 ? std::to_string(n) : std::string("N"))
      << "], got ";
  if (t.defined()) {
    out << t.sizes();
  } else {
    out << "an undefined tensor";
  }
  throw std::invalid_argument(out.str());
}

}  // namespace concord::algos::tensor_checks
