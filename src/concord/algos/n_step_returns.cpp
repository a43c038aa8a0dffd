#include "concord/algos/n_step_returns.h"

#include <ATen/ops/from_blob.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#include "concord/algos/tensor_checks.h"

namespace concord::algos {
namespace {

using namespace tensor_checks;

constexpr const char* kFn = "n_step_targets";

void check_n(const char* fn, int64_t n) {
  if (n < 1) fail(fn, "n must be >= 1, got " + std::to_string(n));
}

struct Window {
  double reward;    // sum_{k < m} gamma^k rewards[k]
  double discount;  // gamma^m
};

// The one place both forms sum a window, so that they agree bit for bit (the same operations
// in the same order).
Window discounted_sum(const std::vector<double>& rewards, double gamma) {
  double sum = 0.0;
  double discount = 1.0;
  for (double reward : rewards) {
    sum += discount * reward;
    discount *= gamma;
  }
  return {sum, discount};
}

// A [T, B] tensor of `values` with `dtype`, on `device`.
template <typename T>
at::Tensor to_tensor(std::vector<T>& values, int64_t steps, int64_t batch, at::ScalarType source_dtype,
                     at::ScalarType dtype, const at::Device& device) {
  return at::from_blob(values.data(), {steps, batch}, at::TensorOptions().dtype(source_dtype))
      .to(device, dtype, /*non_blocking=*/false, /*copy=*/true);
}

}  // namespace

NStepTargets n_step_targets(const at::Tensor& rewards, const at::Tensor& terminated, const at::Tensor& truncated,
                            double gamma, int64_t n) {
  check_rewards(kFn, rewards);
  check_like_rewards(kFn, "terminated", terminated, rewards, /*is_flag=*/true);
  check_like_rewards(kFn, "truncated", truncated, rewards, /*is_flag=*/true);
  check_unit_interval(kFn, "gamma", gamma);
  check_n(kFn, n);

  c10::NoGradGuard no_grad;
  const int64_t steps = rewards.size(0);
  const int64_t batch = rewards.size(1);
  const at::Tensor r = rewards.detach().to(at::kCPU, at::kDouble).contiguous();
  const at::Tensor term = as_bool(terminated).to(at::kCPU).contiguous();
  const at::Tensor ended = as_bool(terminated).logical_or(as_bool(truncated)).to(at::kCPU).contiguous();
  const double* r_data = r.data_ptr<double>();
  const bool* term_data = term.data_ptr<bool>();
  const bool* ended_data = ended.data_ptr<bool>();

  const auto cells = static_cast<size_t>(steps * batch);
  std::vector<double> returns(cells), discounts(cells);
  std::vector<bool> bootstrap_bits(cells);
  std::vector<int64_t> bootstrap_steps(cells), window_steps(cells);
  std::vector<double> window;
  for (int64_t b = 0; b < batch; ++b) {
    // The last step of t's window at the latest: its episode's end, found backwards, or the
    // segment's last row.
    int64_t last_possible = steps - 1;
    for (int64_t t = steps - 1; t >= 0; --t) {
      const auto cell = static_cast<size_t>(t * batch + b);
      if (ended_data[cell]) last_possible = t;
      const int64_t m = std::min(n, last_possible - t + 1);
      window.clear();
      for (int64_t k = 0; k < m; ++k) window.push_back(r_data[(t + k) * batch + b]);
      const Window sum = discounted_sum(window, gamma);
      const int64_t last = t + m - 1;
      const bool bootstrap = !term_data[last * batch + b];
      returns[cell] = sum.reward;
      discounts[cell] = bootstrap ? sum.discount : 0.0;
      bootstrap_bits[cell] = bootstrap;
      bootstrap_steps[cell] = last;
      window_steps[cell] = m;
    }
  }

  std::vector<uint8_t> bootstrap_bytes(bootstrap_bits.begin(), bootstrap_bits.end());
  const at::Device device = rewards.device();
  const at::ScalarType dtype = rewards.scalar_type();
  NStepTargets out;
  out.returns = to_tensor(returns, steps, batch, at::kDouble, dtype, device);
  out.discounts = to_tensor(discounts, steps, batch, at::kDouble, dtype, device);
  out.bootstrap = to_tensor(bootstrap_bytes, steps, batch, at::kByte, at::kBool, device);
  out.bootstrap_steps = to_tensor(bootstrap_steps, steps, batch, at::kLong, at::kLong, device);
  out.steps = to_tensor(window_steps, steps, batch, at::kLong, at::kLong, device);
  return out;
}

NStepQueue::NStepQueue(int64_t n, double gamma) : n_(n), gamma_(gamma) {
  check_n("NStepQueue", n);
  check_unit_interval("NStepQueue", "gamma", gamma);
}

NStepTransition NStepQueue::front_transition(bool terminated) const {
  std::vector<double> window;
  window.reserve(steps_.size());
  for (const Step& step : steps_) window.push_back(step.reward);
  const Window sum = discounted_sum(window, gamma_);
  NStepTransition out;
  out.observation = steps_.front().observation;
  out.action = steps_.front().action;
  out.reward = sum.reward;
  out.bootstrap_observation = steps_.back().next_observation;
  out.bootstrap = !terminated;
  out.discount = terminated ? 0.0 : sum.discount;
  out.steps = static_cast<int64_t>(steps_.size());
  out.q_first = steps_.front().estimates.q_taken;
  out.bootstrap_value = steps_.back().estimates.next_value;
  return out;
}

std::vector<NStepTransition> NStepQueue::push(at::Tensor observation, at::Tensor action, double reward, bool terminated,
                                              bool truncated, at::Tensor next_observation, ActingEstimates estimates) {
  steps_.push_back({std::move(observation), std::move(action), reward, std::move(next_observation), estimates});
  std::vector<NStepTransition> ready;
  if (terminated || truncated) {
    // The episode is over: every pending window ends here, with no bootstrap if it terminated
    // and from the final observation (next_observation) if it was truncated.
    while (!steps_.empty()) {
      ready.push_back(front_transition(terminated));
      steps_.pop_front();
    }
  } else if (static_cast<int64_t>(steps_.size()) == n_) {
    ready.push_back(front_transition(/*terminated=*/false));
    steps_.pop_front();
  }
  return ready;
}

std::vector<NStepTransition> NStepQueue::flush() {
  std::vector<NStepTransition> ready;
  while (!steps_.empty()) {
    ready.push_back(front_transition(/*terminated=*/false));
    steps_.pop_front();
  }
  return ready;
}

}  // namespace concord::algos
