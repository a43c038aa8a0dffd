#include "concord/algos/returns.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/zeros.h>
#include <gtest/gtest.h>

#include <cmath>
#include <initializer_list>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "algos/tensor_test_util.h"

namespace concord::algos {
namespace {

constexpr double kGamma = 0.9;

using test_util::expect_rows_near;
using test_util::kTol;
using test_util::rows;
using test_util::vec;

// The hand-worked rollout shared by the tests below (see tensor_test_util.h).
using Rollout = test_util::HandWorkedRollout;

TEST(NStepReturnsTest, HandWorkedTerminationTruncationAndPlainColumn) {
  // gamma = 0.9, computed backwards from t = 2.
  // column 0 (terminated at t = 1):
  //   R2 = 3 + 0.9 * bootstrap 2          = 4.8
  //   R1 = 2 + 0.9 * 0 (terminated)       = 2
  //   R0 = 1 + 0.9 * R1 = 1 + 1.8         = 2.8
  // column 1 (truncated at t = 1, final value 4):
  //   R2 = 2 + 0.9 * bootstrap 3          = 4.7
  //   R1 = 1 + 0.9 * 4 (final obs value)  = 4.6   (not 1 + 0.9 * R2)
  //   R0 = 0.5 + 0.9 * 4.6 = 0.5 + 4.14   = 4.64
  // column 2 (plain):
  //   R2 = -1 + 0.9 * bootstrap 1         = -0.1
  //   R1 = 0 + 0.9 * -0.1                 = -0.09
  //   R0 = 1 + 0.9 * -0.09 = 1 - 0.081    = 0.919
  expect_rows_near(Rollout().returns(), {{2.8f, 4.64f, 0.919f},  //
                                         {2.0f, 4.6f, -0.09f},
                                         {4.8f, 4.7f, -0.1f}});
}

TEST(NStepReturnsTest, NoBootstrapAcrossTermination) {
  // Whatever follows column 0's termination (the new episode's rewards, values and the
  // bootstrap) cannot reach R0 and R1 of column 0.
  Rollout r;
  r.rewards[2][0] = 50.0f;
  r.values[2][0] = -7.0f;
  r.bootstrap[0] = 1000.0f;
  const at::Tensor returns = r.returns();
  EXPECT_NEAR(returns[0][0].item<float>(), 2.8, kTol);
  EXPECT_NEAR(returns[1][0].item<float>(), 2.0, kTol);
  // R2 = 50 + 0.9 * 1000 = 950
  EXPECT_NEAR(returns[2][0].item<float>(), 950.0, 1e-3);
}

TEST(NStepReturnsTest, TruncationBootstrapsFromFinalObservationValueNotNextRow) {
  Rollout r;
  // Row 2 of column 1 belongs to the next episode: changing it leaves R0 and R1 alone.
  r.rewards[2][1] = -40.0f;
  r.bootstrap[1] = 500.0f;
  at::Tensor returns = r.returns();
  EXPECT_NEAR(returns[1][1].item<float>(), 4.6, kTol);
  EXPECT_NEAR(returns[0][1].item<float>(), 4.64, kTol);
  // Raising the final observation's value from 4 to 5 raises R1 by 0.9 and R0 by 0.81:
  //   R1 = 1 + 0.9 * 5 = 5.5;  R0 = 0.5 + 0.9 * 5.5 = 5.45
  r.truncation_values[1][1] = 5.0f;
  returns = r.returns();
  EXPECT_NEAR(returns[1][1].item<float>(), 5.5, kTol);
  EXPECT_NEAR(returns[0][1].item<float>(), 5.45, kTol);
}

TEST(NStepReturnsTest, IgnoresTruncationValuesOutsideTruncations) {
  Rollout r;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  r.truncation_values = rows({{nan, nan, nan}, {nan, 4, nan}, {nan, nan, nan}});
  expect_rows_near(r.returns(), {{2.8f, 4.64f, 0.919f}, {2.0f, 4.6f, -0.09f}, {4.8f, 4.7f, -0.1f}});
}

TEST(NStepReturnsTest, WithoutTruncationValuesTruncationEndsLikeTermination) {
  // CleanRL's treatment: done = terminated | truncated, so column 1 gets no bootstrap at t = 1:
  //   R1 = 1 + 0.9 * 0 = 1;  R0 = 0.5 + 0.9 * 1 = 1.4.  Columns 0 and 2 are unchanged.
  expect_rows_near(Rollout().returns(/*with_truncation_values=*/false),
                   {{2.8f, 1.4f, 0.919f}, {2.0f, 1.0f, -0.09f}, {4.8f, 4.7f, -0.1f}});
}

TEST(NStepReturnsTest, TerminationWinsWhenBothFlagsAreSet) {
  Rollout r;
  r.terminated[1][1] = true;  // column 1 now both terminates and truncates at t = 1
  // R1 = 1 + 0.9 * 0 = 1;  R0 = 0.5 + 0.9 * 1 = 1.4
  const at::Tensor returns = r.returns();
  EXPECT_NEAR(returns[1][1].item<float>(), 1.0, kTol);
  EXPECT_NEAR(returns[0][1].item<float>(), 1.4, kTol);
}

TEST(NStepReturnsTest, LastRowBootstrapsUnlessItEndsAnEpisode) {
  // T = 1, B = 3: plain, terminated, truncated (final value 10); bootstrap 2 everywhere.
  //   plain: 1 + 0.9 * 2 = 2.8;  terminated: 1;  truncated: 1 + 0.9 * 10 = 10
  const at::Tensor r = rows({{1, 1, 1}});
  const at::Tensor out = n_step_returns(r, rows({{0, 1, 0}}), rows({{0, 0, 1}}), rows({{0, 0, 0}}), vec({2, 2, 2}),
                                        rows({{0, 0, 10}}), kGamma);
  expect_rows_near(out, {{2.8f, 1.0f, 10.0f}});
}

TEST(NStepReturnsTest, FloatFlagsMeanNonzeroAndDtypeFollowsRewards) {
  Rollout r;
  const at::Tensor expected = r.returns();
  // Flags as float32 with arbitrary nonzero values give the same returns.
  const at::Tensor as_float =
      n_step_returns(r.rewards, r.terminated.to(at::kFloat).mul(3), r.truncated.to(at::kFloat).mul(-1), r.values,
                     r.bootstrap, r.truncation_values, kGamma);
  EXPECT_TRUE(as_float.allclose(expected, 0.0, kTol));
  // float64 inputs give a float64 result.
  const at::Tensor as_double =
      n_step_returns(r.rewards.to(at::kDouble), r.terminated, r.truncated, r.values.to(at::kDouble),
                     r.bootstrap.to(at::kDouble), r.truncation_values.to(at::kDouble), kGamma);
  EXPECT_EQ(as_double.scalar_type(), at::kDouble);
  EXPECT_TRUE(as_double.to(at::kFloat).allclose(expected, 0.0, kTol));
}

TEST(NStepReturnsTest, ResultIsATargetWithoutGradient) {
  Rollout r;
  r.rewards.requires_grad_(true);
  r.bootstrap.requires_grad_(true);
  EXPECT_FALSE(r.returns().requires_grad());
}

TEST(NStepReturnsTest, EmptyRolloutGivesEmptyReturns) {
  const at::Tensor empty = at::zeros({0, 2});
  const at::Tensor out = n_step_returns(empty, empty, empty, empty, at::zeros({2}), std::nullopt, kGamma);
  EXPECT_EQ(out.sizes(), empty.sizes());
}

TEST(NStepReturnsTest, RejectsMismatchedInputsWithTheirShapes) {
  Rollout r;
  try {
    n_step_returns(r.rewards, r.terminated, r.truncated, r.values.slice(1, 0, 2), r.bootstrap, std::nullopt, kGamma);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("values"), std::string::npos) << message;
    EXPECT_NE(message.find("[3, 2]"), std::string::npos) << message;
    EXPECT_NE(message.find("[3, 3]"), std::string::npos) << message;
  }
  EXPECT_THROW(n_step_returns(r.rewards, r.terminated, r.truncated, r.values, vec({1, 2}), std::nullopt, kGamma),
               std::invalid_argument);
  EXPECT_THROW(
      n_step_returns(r.rewards, r.terminated, r.truncated, r.values.to(at::kDouble), r.bootstrap, std::nullopt, kGamma),
      std::invalid_argument);
  EXPECT_THROW(
      n_step_returns(r.rewards[0], r.terminated[0], r.truncated[0], r.values[0], r.bootstrap, std::nullopt, kGamma),
      std::invalid_argument);
  EXPECT_THROW(n_step_returns(r.rewards, r.terminated, r.truncated, r.values, r.bootstrap, std::nullopt, 1.5),
               std::invalid_argument);
  EXPECT_THROW(n_step_returns(r.rewards, r.terminated, r.truncated, r.values, r.bootstrap, std::nullopt, std::nan("")),
               std::invalid_argument);
}

}  // namespace
}  // namespace concord::algos
