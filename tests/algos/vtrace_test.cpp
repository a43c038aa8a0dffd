#include "concord/algos/vtrace.h"

#include "concord/algos/returns.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/zeros_like.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <random>
#include <stdexcept>
#include <utility>
#include <vector>

#include "algos/tensor_test_util.h"

namespace concord::algos {
namespace {

constexpr double kGamma = 0.9;

using test_util::expect_all_near;
using test_util::expect_rows_near;
using test_util::kTol;
using test_util::rows;
using test_util::vec;

// Log-probabilities whose ratio pi / mu is `ratios`, with behaviour log-probabilities of -1.
std::pair<at::Tensor, at::Tensor> log_probs_with_ratios(const at::Tensor& ratios) {
  at::Tensor behaviour = at::zeros_like(ratios).fill_(-1.0);
  return {behaviour, behaviour.add(ratios.log())};
}

TEST(VTraceTest, OnPolicyHandWorkedEqualsBootstrappedReturns) {
  // Columns 0 and 2 of the returns_test.cpp example (gamma = 0.9), here columns 0 and 1:
  // column 0 terminates at t = 1, column 1 runs on. On-policy every rho and c is 1, so
  // v_t = r_t + discount_t * v_{t+1}:
  //   column 0: v2 = 3 + 0.9 * 2 = 4.8;  v1 = 2 + 0 * 4.8 = 2;  v0 = 1 + 0.9 * 2 = 2.8
  //   column 1: v2 = -1 + 0.9 * 1 = -0.1;  v1 = 0 + 0.9 * -0.1 = -0.09;  v0 = 1 - 0.081 = 0.919
  // and pg_advantages_t = r_t + discount_t * v_{t+1} - V_t = v_t - V_t:
  //   column 0: [2.8 - 0.5, 2 - 1, 4.8 - 1.5]  = [2.3, 1, 3.3]
  //   column 1: [0.919 - 2, -0.09 - 1, -0.1 - 3] = [-1.081, -1.09, -3.1]
  const at::Tensor rewards = rows({{1, 1}, {2, 0}, {3, -1}});
  const at::Tensor values = rows({{0.5f, 2}, {1, 1}, {1.5f, 3}});
  const at::Tensor discounts = rows({{0.9f, 0.9f}, {0, 0.9f}, {0.9f, 0.9f}});
  const at::Tensor log_probs = rows({{-0.3f, -2}, {-1, -0.1f}, {-0.7f, -1.5f}});
  const VTraceResult out = vtrace(log_probs, log_probs, rewards, values, vec({2, 1}), discounts);
  expect_rows_near(out.vs, {{2.8f, 0.919f}, {2.0f, -0.09f}, {4.8f, -0.1f}});
  expect_rows_near(out.pg_advantages, {{2.3f, -1.081f}, {1.0f, -1.09f}, {3.3f, -3.1f}});
}

TEST(VTraceTest, OnPolicyEqualsNStepReturnsForClipThresholdsAtLeastOne) {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::bernoulli_distribution flag(0.2);
  const int64_t steps = 19;
  const int64_t batch = 6;
  std::vector<float> rew, val, term, logp, boot;
  for (int64_t i = 0; i < steps * batch; ++i) {
    rew.push_back(normal(rng));
    val.push_back(normal(rng));
    term.push_back(flag(rng) ? 1.0f : 0.0f);
    logp.push_back(-std::abs(normal(rng)));
  }
  for (int64_t b = 0; b < batch; ++b) boot.push_back(normal(rng));
  const at::Tensor rewards = at::tensor(rew).reshape({steps, batch});
  const at::Tensor values = at::tensor(val).reshape({steps, batch});
  const at::Tensor terminated = at::tensor(term).reshape({steps, batch});
  const at::Tensor log_probs = at::tensor(logp).reshape({steps, batch});
  const at::Tensor bootstrap = at::tensor(boot);
  const at::Tensor discounts = terminated.neg().add(1.0).mul(kGamma);  // gamma * (1 - terminated)

  const at::Tensor returns =
      n_step_returns(rewards, terminated, at::zeros_like(terminated), values, bootstrap, std::nullopt, kGamma);
  const double inf = std::numeric_limits<double>::infinity();
  for (const auto& [rho_bar, c_bar] : std::vector<std::pair<double, double>>{{1.0, 1.0}, {2.0, 3.0}, {inf, inf}}) {
    const VTraceResult out = vtrace(log_probs, log_probs, rewards, values, bootstrap, discounts, rho_bar, c_bar);
    expect_all_near(out.vs, returns);
    expect_all_near(out.pg_advantages, returns.sub(values));
  }
}

TEST(VTraceTest, OffPolicyHandWorkedWithClipping) {
  // gamma = 0.9, rho_bar = c_bar = 1. Ratios pi / mu: column 0 [2, 0.5, 1], column 1
  // [0.5, 2, 0.5]; a ratio of 2 is clipped to 1, a ratio of 0.5 is kept, so rho = c =
  // column 0 [1, 0.5, 1], column 1 [0.5, 1, 0.5]. Column 1 terminates at t = 0 (discount 0).
  //
  // column 0: r = [1, 2, 3], V = [0.5, 1, 1.5], bootstrap 2, V_{t+1} = [1, 1.5, 2]
  //   delta0 = 1   * (1 + 0.9 * 1   - 0.5) = 1.4
  //   delta1 = 0.5 * (2 + 0.9 * 1.5 - 1)   = 0.5 * 2.35 = 1.175
  //   delta2 = 1   * (3 + 0.9 * 2   - 1.5) = 3.3
  //   v2 - V2 = 3.3
  //   v1 - V1 = 1.175 + 0.9 * 0.5 * 3.3  = 1.175 + 1.485 = 2.66
  //   v0 - V0 = 1.4   + 0.9 * 1   * 2.66 = 1.4 + 2.394   = 3.794
  //   vs = [3.794 + 0.5, 2.66 + 1, 3.3 + 1.5] = [4.294, 3.66, 4.8]
  //   pg0 = 1   * (1 + 0.9 * 3.66 - 0.5) = 3.794
  //   pg1 = 0.5 * (2 + 0.9 * 4.8  - 1)   = 0.5 * 5.32 = 2.66
  //   pg2 = 1   * (3 + 0.9 * 2    - 1.5) = 3.3
  // column 1: r = [1, -1, 2], V = [2, 1, 0], bootstrap 1, discounts [0, 0.9, 0.9],
  //   V_{t+1} = [1, 0, 1]
  //   delta0 = 0.5 * (1 + 0 * 1 - 2)     = -0.5
  //   delta1 = 1   * (-1 + 0.9 * 0 - 1)  = -2
  //   delta2 = 0.5 * (2 + 0.9 * 1 - 0)   = 1.45
  //   v2 - V2 = 1.45
  //   v1 - V1 = -2 + 0.9 * 1 * 1.45 = -0.695
  //   v0 - V0 = -0.5 + 0 * ...      = -0.5   (the trace is cut by the termination)
  //   vs = [-0.5 + 2, -0.695 + 1, 1.45 + 0] = [1.5, 0.305, 1.45]
  //   pg0 = 0.5 * (1 + 0 * 0.305 - 2)   = -0.5
  //   pg1 = 1   * (-1 + 0.9 * 1.45 - 1) = -0.695
  //   pg2 = 0.5 * (2 + 0.9 * 1 - 0)     = 1.45
  const auto [behaviour, target] = log_probs_with_ratios(rows({{2, 0.5f}, {0.5f, 2}, {1, 0.5f}}));
  const VTraceResult out =
      vtrace(behaviour, target, rows({{1, 1}, {2, -1}, {3, 2}}), rows({{0.5f, 2}, {1, 1}, {1.5f, 0}}), vec({2, 1}),
             rows({{0.9f, 0}, {0.9f, 0.9f}, {0.9f, 0.9f}}), 1.0, 1.0);
  expect_rows_near(out.vs, {{4.294f, 1.5f}, {3.66f, 0.305f}, {4.8f, 1.45f}});
  expect_rows_near(out.pg_advantages, {{3.794f, -0.5f}, {2.66f, -0.695f}, {3.3f, 1.45f}});
}

TEST(VTraceTest, TraceCoefficientsClipSeparatelyFromRho) {
  // Column 0 of the off-policy example with c_bar = 0.25 < rho_bar = 1: rho = [1, 0.5, 1] as
  // before, so the deltas are still [1.4, 1.175, 3.3], but every c is 0.25:
  //   v2 - V2 = 3.3
  //   v1 - V1 = 1.175 + 0.9 * 0.25 * 3.3    = 1.175 + 0.7425    = 1.9175
  //   v0 - V0 = 1.4   + 0.9 * 0.25 * 1.9175 = 1.4 + 0.4314375   = 1.8314375
  //   vs = [2.3314375, 2.9175, 4.8]
  //   pg0 = 1   * (1 + 0.9 * 2.9175 - 0.5) = 0.5 + 2.62575 = 3.12575
  //   pg1 = 0.5 * (2 + 0.9 * 4.8    - 1)   = 2.66
  //   pg2 = 1   * (3 + 0.9 * 2      - 1.5) = 3.3
  const auto [behaviour, target] = log_probs_with_ratios(rows({{2}, {0.5f}, {1}}));
  const VTraceResult out = vtrace(behaviour, target, rows({{1}, {2}, {3}}), rows({{0.5f}, {1}, {1.5f}}), vec({2}),
                                  rows({{0.9f}, {0.9f}, {0.9f}}), 1.0, 0.25);
  expect_rows_near(out.vs, {{2.3314375f}, {2.9175f}, {4.8f}});
  expect_rows_near(out.pg_advantages, {{3.12575f}, {2.66f}, {3.3f}});
}

TEST(VTraceTest, RatioAboveOneIsKeptWhenRhoBarAllows) {
  // T = 1, ratio 2, rho_bar = 3: delta = 2 * (1 + 0.9 * 2 - 0.5) = 2 * 2.3 = 4.6,
  // vs = 0.5 + 4.6 = 5.1, pg = 2 * (1 + 0.9 * 2 - 0.5) = 4.6.
  const auto [behaviour, target] = log_probs_with_ratios(rows({{2}}));
  const VTraceResult out = vtrace(behaviour, target, rows({{1}}), rows({{0.5f}}), vec({2}), rows({{0.9f}}), 3.0, 3.0);
  expect_rows_near(out.vs, {{5.1f}});
  expect_rows_near(out.pg_advantages, {{4.6f}});
}

TEST(VTraceTest, ResultIsComputedWithoutGradient) {
  const auto [behaviour, target] = log_probs_with_ratios(rows({{2, 0.5f}, {0.5f, 2}}));
  at::Tensor target_with_grad = target.clone().requires_grad_(true);
  at::Tensor values = rows({{0.5f, 2}, {1, 1}}).requires_grad_(true);
  const VTraceResult out = vtrace(behaviour, target_with_grad, rows({{1, 1}, {2, -1}}), values, vec({2, 1}),
                                  rows({{0.9f, 0}, {0.9f, 0.9f}}));
  EXPECT_FALSE(out.vs.requires_grad());
  EXPECT_FALSE(out.pg_advantages.requires_grad());
}

TEST(VTraceTest, EmptyRolloutGivesEmptyResults) {
  const at::Tensor empty = at::zeros({0, 3});
  const VTraceResult out = vtrace(empty, empty, empty, empty, at::zeros({3}), empty);
  EXPECT_EQ(out.vs.sizes(), empty.sizes());
  EXPECT_EQ(out.pg_advantages.sizes(), empty.sizes());
}

TEST(VTraceTest, RejectsBadInputs) {
  const at::Tensor x = rows({{1, 1}, {2, -1}});
  EXPECT_THROW(vtrace(x, x, x, x, vec({2, 1, 0}), x), std::invalid_argument);
  EXPECT_THROW(vtrace(x, x.slice(0, 0, 1), x, x, vec({2, 1}), x), std::invalid_argument);
  EXPECT_THROW(vtrace(x, x, x, x, vec({2, 1}), x.to(at::kDouble)), std::invalid_argument);
  EXPECT_THROW(vtrace(x, x, x, x, vec({2, 1}), x, 0.0, 1.0), std::invalid_argument);
  EXPECT_THROW(vtrace(x, x, x, x, vec({2, 1}), x, 1.0, -1.0), std::invalid_argument);
}

}  // namespace
}  // namespace concord::algos
