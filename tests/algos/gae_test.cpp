#include "concord/algos/gae.h"

#include "concord/algos/returns.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/zeros.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <random>
#include <stdexcept>
#include <vector>

#include "algos/tensor_test_util.h"

namespace concord::algos {
namespace {

constexpr double kGamma = 0.9;
constexpr double kLambda = 0.8;

using test_util::expect_all_near;
using test_util::expect_rows_near;
using test_util::HandWorkedRollout;
using test_util::kTol;
using test_util::rows;
using test_util::vec;

// The hand-worked rollout of returns_test.cpp (see tensor_test_util.h), with GAE as well.
struct Rollout : HandWorkedRollout {
  GaeResult gae(double gae_lambda, bool with_truncation_values = true) const {
    return algos::gae(rewards, values, terminated, truncated, bootstrap,
                      maybe_truncation_values(with_truncation_values), kGamma, gae_lambda);
  }
};

// A random rollout with frequent terminations and truncations.
Rollout random_rollout(int64_t steps, int64_t batch, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::bernoulli_distribution flag(0.2);
  auto fill = [&](auto& dist, std::vector<int64_t> shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::vector<float> data(static_cast<size_t>(n));
    for (float& x : data) x = static_cast<float>(dist(rng));
    return at::tensor(data).reshape(shape);
  };
  Rollout r;
  r.rewards = fill(normal, {steps, batch});
  r.values = fill(normal, {steps, batch});
  r.terminated = fill(flag, {steps, batch}).to(at::kBool);
  r.truncated = fill(flag, {steps, batch}).to(at::kBool);
  r.truncation_values = fill(normal, {steps, batch});
  r.bootstrap = fill(normal, {batch});
  return r;
}

TEST(GaeTest, HandWorkedTerminationTruncationAndPlainColumn) {
  // gamma = 0.9, lambda = 0.8, so gamma * lambda = 0.72.
  // delta_t = r_t + 0.9 * next_t - V_t, A_t = delta_t + 0.72 * A_{t+1} unless t ends an episode.
  // column 0 (terminated at t = 1): next = [V1 = 1, 0, bootstrap 2]
  //   d0 = 1 + 0.9 * 1 - 0.5 = 1.4;  d1 = 2 + 0 - 1 = 1;  d2 = 3 + 0.9 * 2 - 1.5 = 3.3
  //   A2 = 3.3;  A1 = 1 (cut at the termination);  A0 = 1.4 + 0.72 * 1 = 2.12
  // column 1 (truncated at t = 1, final value 4): next = [V1 = 2, 4, bootstrap 3]
  //   d0 = 0.5 + 0.9 * 2 - 1 = 1.3;  d1 = 1 + 0.9 * 4 - 2 = 2.6;  d2 = 2 + 0.9 * 3 - 0.5 = 4.2
  //   A2 = 4.2;  A1 = 2.6 (cut at the truncation);  A0 = 1.3 + 0.72 * 2.6 = 1.3 + 1.872 = 3.172
  // column 2 (plain): next = [V1 = 1, V2 = 3, bootstrap 1]
  //   d0 = 1 + 0.9 - 2 = -0.1;  d1 = 0 + 2.7 - 1 = 1.7;  d2 = -1 + 0.9 - 3 = -3.1
  //   A2 = -3.1;  A1 = 1.7 + 0.72 * -3.1 = 1.7 - 2.232 = -0.532
  //   A0 = -0.1 + 0.72 * -0.532 = -0.1 - 0.38304 = -0.48304
  const GaeResult out = Rollout().gae(kLambda);
  expect_rows_near(out.advantages, {{2.12f, 3.172f, -0.48304f},  //
                                    {1.0f, 2.6f, -0.532f},
                                    {3.3f, 4.2f, -3.1f}});
  // returns = A + V
  //   column 0: 2.12 + 0.5 = 2.62;  1 + 1 = 2;        3.3 + 1.5 = 4.8
  //   column 1: 3.172 + 1 = 4.172;  2.6 + 2 = 4.6;    4.2 + 0.5 = 4.7
  //   column 2: -0.48304 + 2 = 1.51696;  -0.532 + 1 = 0.468;  -3.1 + 3 = -0.1
  expect_rows_near(out.returns, {{2.62f, 4.172f, 1.51696f},  //
                                 {2.0f, 4.6f, 0.468f},
                                 {4.8f, 4.7f, -0.1f}});
}

TEST(GaeTest, WithoutTruncationValuesFollowsCleanRL) {
  // done = terminated | truncated: column 1 gets next_1 = 0 at its truncation.
  //   d1 = 1 + 0 - 2 = -1;  A1 = -1;  A0 = 1.3 + 0.72 * -1 = 0.58
  //   returns: 0.58 + 1 = 1.58;  -1 + 2 = 1.  Columns 0 and 2 are unchanged.
  const GaeResult out = Rollout().gae(kLambda, /*with_truncation_values=*/false);
  expect_rows_near(out.advantages, {{2.12f, 0.58f, -0.48304f}, {1.0f, -1.0f, -0.532f}, {3.3f, 4.2f, -3.1f}});
  expect_rows_near(out.returns, {{2.62f, 1.58f, 1.51696f}, {2.0f, 1.0f, 0.468f}, {4.8f, 4.7f, -0.1f}});
}

TEST(GaeTest, NoBootstrapOrTraceAcrossTermination) {
  // Nothing after column 0's termination at t = 1 reaches A0 or A1 of column 0.
  Rollout r;
  r.rewards[2][0] = 50.0f;
  r.values[2][0] = -7.0f;
  r.bootstrap[0] = 1000.0f;
  const GaeResult out = r.gae(kLambda);
  EXPECT_NEAR(out.advantages[0][0].item<float>(), 2.12, kTol);
  EXPECT_NEAR(out.advantages[1][0].item<float>(), 1.0, kTol);
}

TEST(GaeTest, TruncationBootstrapsFromFinalObservationValueNotNextRow) {
  Rollout r;
  // Row 2 of column 1 is the next episode's first observation: neither its value nor what
  // follows it reaches A0 or A1 of column 1.
  r.values[2][1] = 60.0f;
  r.rewards[2][1] = -40.0f;
  r.bootstrap[1] = 500.0f;
  GaeResult out = r.gae(kLambda);
  EXPECT_NEAR(out.advantages[1][1].item<float>(), 2.6, kTol);
  EXPECT_NEAR(out.advantages[0][1].item<float>(), 3.172, kTol);
  // Raising the final observation's value from 4 to 5 raises delta_1 by 0.9:
  //   A1 = 2.6 + 0.9 = 3.5;  A0 = 1.3 + 0.72 * 3.5 = 3.82
  r.truncation_values[1][1] = 5.0f;
  out = r.gae(kLambda);
  EXPECT_NEAR(out.advantages[1][1].item<float>(), 3.5, kTol);
  EXPECT_NEAR(out.advantages[0][1].item<float>(), 3.82, kTol);
}

TEST(GaeTest, LambdaOneGivesBootstrappedReturnsMinusValues) {
  // With lambda = 1 the deltas telescope: A_t = R_t - V_t, with R_t from the returns example:
  //   column 0: R = [2.8, 2, 4.8]       -> A = [2.8 - 0.5, 2 - 1, 4.8 - 1.5]   = [2.3, 1, 3.3]
  //   column 1: R = [4.64, 4.6, 4.7]    -> A = [4.64 - 1, 4.6 - 2, 4.7 - 0.5]  = [3.64, 2.6, 4.2]
  //   column 2: R = [0.919, -0.09, -0.1] -> A = [0.919 - 2, -0.09 - 1, -0.1 - 3]
  //                                           = [-1.081, -1.09, -3.1]
  const GaeResult out = Rollout().gae(1.0);
  expect_rows_near(out.advantages, {{2.3f, 3.64f, -1.081f}, {1.0f, 2.6f, -1.09f}, {3.3f, 4.2f, -3.1f}});
  expect_rows_near(out.returns, {{2.8f, 4.64f, 0.919f}, {2.0f, 4.6f, -0.09f}, {4.8f, 4.7f, -0.1f}});

  // The same on a random rollout, with and without truncation values.
  const Rollout r = random_rollout(/*steps=*/17, /*batch=*/5, /*seed=*/7);
  for (bool with_truncation_values : {true, false}) {
    const GaeResult random_out = r.gae(1.0, with_truncation_values);
    const at::Tensor returns = r.returns(with_truncation_values);
    expect_all_near(random_out.returns, returns);
    expect_all_near(random_out.advantages, returns.sub(r.values));
  }
}

TEST(GaeTest, LambdaZeroGivesOneStepTdError) {
  // With lambda = 0, A_t = delta_t, the deltas worked out in the hand example above.
  const GaeResult out = Rollout().gae(0.0);
  expect_rows_near(out.advantages, {{1.4f, 1.3f, -0.1f}, {1.0f, 2.6f, 1.7f}, {3.3f, 4.2f, -3.1f}});

  // The same on a random rollout, against a scalar one-step TD error.
  const Rollout r = random_rollout(/*steps=*/13, /*batch=*/4, /*seed=*/11);
  const GaeResult random_out = r.gae(0.0);
  const auto rew = r.rewards.accessor<float, 2>();
  const auto val = r.values.accessor<float, 2>();
  const auto term = r.terminated.accessor<bool, 2>();
  const auto trunc = r.truncated.accessor<bool, 2>();
  const auto final_value = r.truncation_values.accessor<float, 2>();
  const auto boot = r.bootstrap.accessor<float, 1>();
  const auto adv = random_out.advantages.accessor<float, 2>();
  const int64_t steps = r.rewards.size(0);
  for (int64_t t = 0; t < steps; ++t) {
    for (int64_t b = 0; b < r.rewards.size(1); ++b) {
      float next = t + 1 < steps ? val[t + 1][b] : boot[b];
      if (trunc[t][b]) next = final_value[t][b];
      if (term[t][b]) next = 0.0f;
      EXPECT_NEAR(adv[t][b], rew[t][b] + kGamma * next - val[t][b], kTol) << t << ", " << b;
    }
  }
}

TEST(GaeTest, ResultIsATargetWithoutGradient) {
  Rollout r;
  r.values.requires_grad_(true);
  r.rewards.requires_grad_(true);
  const GaeResult out = r.gae(kLambda);
  EXPECT_FALSE(out.advantages.requires_grad());
  EXPECT_FALSE(out.returns.requires_grad());
}

TEST(GaeTest, EmptyRolloutGivesEmptyResults) {
  const at::Tensor empty = at::zeros({0, 2});
  const GaeResult out = gae(empty, empty, empty, empty, at::zeros({2}), std::nullopt, kGamma, kLambda);
  EXPECT_EQ(out.advantages.sizes(), empty.sizes());
  EXPECT_EQ(out.returns.sizes(), empty.sizes());
}

TEST(GaeTest, RejectsBadInputs) {
  Rollout r;
  EXPECT_THROW(
      gae(r.rewards, r.values.slice(0, 0, 2), r.terminated, r.truncated, r.bootstrap, std::nullopt, kGamma, kLambda),
      std::invalid_argument);
  EXPECT_THROW(gae(r.rewards, r.values, r.terminated, r.truncated, r.bootstrap, r.truncation_values.to(at::kDouble),
                   kGamma, kLambda),
               std::invalid_argument);
  EXPECT_THROW(gae(r.rewards, r.values, r.terminated, r.truncated, vec({1, 2}), std::nullopt, kGamma, kLambda),
               std::invalid_argument);
  EXPECT_THROW(gae(r.rewards, r.values, r.terminated, r.truncated, r.bootstrap, std::nullopt, kGamma, -0.1),
               std::invalid_argument);
  EXPECT_THROW(gae(r.rewards, r.values, r.terminated, r.truncated, r.bootstrap, std::nullopt, 1.01, kLambda),
               std::invalid_argument);
}

}  // namespace
}  // namespace concord::algos
