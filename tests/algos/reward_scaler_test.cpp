#include "concord/algos/reward_scaler.h"

#include <ATen/ops/tensor.h>
#include <ATen/ops/zeros.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "algos/tensor_test_util.h"
#include "core/temp_dir.h"

namespace concord::algos {
namespace {

using namespace test_util;

constexpr double kGamma = 0.5;
constexpr double kPriorCount = 1e-4;  // Gymnasium's pseudo-count (mean 0, var 1)

RewardScalerConfig half_discount() {
  RewardScalerConfig config;
  config.gamma = kGamma;
  return config;
}

// Statistics of a stream of n samples with sum s and sum of squares q, after the prior
// (count c = 1e-4, mean 0, var 1): with total = n + c and m = s / total,
//   M2 = c * 1 + sum (x - m)^2 + c * (0 - m)^2 = c + q - 2 m s + n m^2 + c m^2 = c + q - s m
//   var = M2 / total
struct Pooled {
  double mean;
  double var;
};
Pooled pooled(double n, double s, double q) {
  const double total = n + kPriorCount;
  const double m = s / total;
  return {m, (kPriorCount + q - s * m) / total};
}

// Two environments, gamma 0.5. Environment 0 terminates at t = 1; environment 1 is truncated at
// t = 0. The discounted returns G, reset to 0 after each episode end:
//   t = 0: G = [0.5 * 0 + 1, 0.5 * 0 + 2] = [1, 2]      then env 1 ends:  G = [1, 0]
//   t = 1: G = [0.5 * 1 + 3, 0.5 * 0 + 0] = [3.5, 0]    then env 0 ends:  G = [0, 0]
//   t = 2: G = [0.5 * 0 + 1, 0.5 * 0 + 4] = [1, 4]
// Returns {1, 2, 3.5, 0, 1, 4}: n = 6, sum 11.5, sum of squares 1 + 4 + 12.25 + 0 + 1 + 16 = 34.25.
TEST(RewardScalerTest, HandWorkedTwoEnvironmentsWithEpisodeEnds) {
  RewardScaler scaler(half_discount());
  const at::Tensor rewards = rows({{1, 2}, {3, 0}, {1, 4}});
  const at::Tensor terminated = rows({{0, 0}, {1, 0}, {0, 0}});
  const at::Tensor truncated = rows({{0, 1}, {0, 0}, {0, 0}}).to(at::kBool);  // flags may be bool

  const at::Tensor scaled = scaler.scale(rewards, terminated, truncated);
  const Pooled first = pooled(6, 11.5, 34.25);
  EXPECT_NEAR(scaler.return_stats()->mean().item<double>(), first.mean, 1e-12);
  EXPECT_NEAR(scaler.return_stats()->var().item<double>(), first.var, 1e-12);
  EXPECT_NEAR(scaler.return_stats()->count(), 6 + kPriorCount, 1e-12);
  EXPECT_EQ(scaled.scalar_type(), at::kFloat);
  const float std1 = static_cast<float>(std::sqrt(first.var + 1e-8));
  expect_rows_near(scaled, {{1 / std1, 2 / std1}, {3 / std1, 0}, {1 / std1, 4 / std1}});
  // The accumulators carry on: [1, 4].
  EXPECT_TRUE(scaler.returns().equal(at::tensor({1.0, 4.0}, at::kDouble)));

  // The next rollout continues both episodes: G = [0.5 * 1 + 2, 0.5 * 4 + 2] = [2.5, 4].
  // Returns so far: n = 8, sum 11.5 + 6.5 = 18, sum of squares 34.25 + 6.25 + 16 = 56.5.
  const at::Tensor next = scaler.scale(rows({{2, 2}}), at::zeros({1, 2}), at::zeros({1, 2}));
  const Pooled second = pooled(8, 18, 56.5);
  EXPECT_NEAR(scaler.return_stats()->mean().item<double>(), second.mean, 1e-12);
  EXPECT_NEAR(scaler.return_stats()->var().item<double>(), second.var, 1e-12);
  const float std2 = static_cast<float>(std::sqrt(second.var + 1e-8));
  expect_rows_near(next, {{2 / std2, 2 / std2}});
  EXPECT_TRUE(scaler.returns().equal(at::tensor({2.5, 4.0}, at::kDouble)));

  // Negative rewards keep their sign: rewards are scaled, not centred.
  EXPECT_LT(scaler.scale(rows({{-1, -1}}), at::zeros({1, 2}), at::zeros({1, 2}))[0][0].item<float>(), 0.0f);
}

TEST(RewardScalerTest, AccumulatorsRestartWhenTheNumberOfEnvironmentsChanges) {
  RewardScaler scaler(half_discount());
  EXPECT_EQ(scaler.returns().numel(), 0);
  scaler.scale(rows({{1, 2}}), at::zeros({1, 2}), at::zeros({1, 2}));
  scaler.scale(rows({{1, 1, 1}}), at::zeros({1, 3}), at::zeros({1, 3}));
  EXPECT_TRUE(scaler.returns().equal(at::tensor({1.0, 1.0, 1.0}, at::kDouble)));
  EXPECT_NEAR(scaler.return_stats()->count(), 5 + kPriorCount, 1e-12);
}

TEST(RewardScalerTest, ClipsScaledRewards) {
  RewardScalerConfig config = half_discount();
  config.clip = 1.0;
  RewardScaler scaler(config);
  // Returns {0, 0, 0, 100}: n = 4, sum 100, sum of squares 10000; the lone 100 is ~1.7 std.
  const at::Tensor scaled = scaler.scale(rows({{0, 0}, {0, 100}}), at::zeros({2, 2}), rows({{1, 1}, {0, 0}}));
  const Pooled stats = pooled(4, 100, 10000);
  EXPECT_GT(100.0 / std::sqrt(stats.var), 1.0);
  expect_rows_near(scaled, {{0, 0}, {0, 1}});
}

TEST(RewardScalerTest, CheckpointRoundTripAndMissingState) {
  RewardScaler scaler(half_discount());
  scaler.scale(rows({{1, 2}, {3, 0}, {1, 4}}), rows({{0, 0}, {1, 0}, {0, 0}}), rows({{0, 1}, {0, 0}, {0, 0}}));
  core::Checkpoint checkpoint;
  scaler.save(checkpoint);
  EXPECT_THAT(checkpoint.tensors, ::testing::ElementsAre(::testing::Key("reward_scaler/return_rms.count"),
                                                         ::testing::Key("reward_scaler/return_rms.mean"),
                                                         ::testing::Key("reward_scaler/return_rms.var"),
                                                         ::testing::Key("reward_scaler/returns")));
  EXPECT_TRUE(RewardScaler::in_checkpoint(checkpoint));
  EXPECT_FALSE(RewardScaler::in_checkpoint(core::Checkpoint{}));

  RewardScaler restored(half_discount());
  restored.load(checkpoint);
  EXPECT_TRUE(restored.returns().equal(scaler.returns()));
  EXPECT_TRUE(restored.return_stats()->var().equal(scaler.return_stats()->var()));
  EXPECT_DOUBLE_EQ(restored.return_stats()->count(), scaler.return_stats()->count());
  // Both scale the next rollout identically.
  const at::Tensor next = rows({{2, -1}});
  EXPECT_TRUE(restored.scale(next, at::zeros({1, 2}), at::zeros({1, 2}))
                  .equal(scaler.scale(next, at::zeros({1, 2}), at::zeros({1, 2}))));

  core::Checkpoint missing = checkpoint;
  missing.tensors.erase("reward_scaler/return_rms.var");
  RewardScaler untouched(half_discount());
  try {
    untouched.load(missing);
    FAIL() << "expected a CheckpointError";
  } catch (const core::CheckpointError& error) {
    EXPECT_EQ(error.kind(), core::CheckpointError::Kind::kTensorMissing);
    EXPECT_THAT(error.what(), ::testing::HasSubstr("reward_scaler/return_rms.var"));
  }
  EXPECT_EQ(untouched.returns().numel(), 0);
}

// Saved before its first rollout (a checkpoint at step 0), the scaler has no accumulators yet:
// an empty [0] tensor, which must survive the file format too.
class RewardScalerFileTest : public test::TempDirTest {
 protected:
  RewardScalerFileTest() : TempDirTest("reward_scaler_test_") {}
};

TEST_F(RewardScalerFileTest, FreshScalerSurvivesACheckpointFile) {
  RewardScaler fresh(half_discount());
  core::Checkpoint checkpoint;
  fresh.save(checkpoint);
  core::save_checkpoint(dir_ / "fresh.ckpt", checkpoint);
  RewardScaler restored(half_discount());
  restored.load(core::load_checkpoint(dir_ / "fresh.ckpt"));
  EXPECT_EQ(restored.returns().numel(), 0);
  EXPECT_DOUBLE_EQ(restored.return_stats()->count(), kPriorCount);
  // Its first rollout then starts the accumulators at zero.
  restored.scale(rows({{1, 2}}), at::zeros({1, 2}), at::zeros({1, 2}));
  EXPECT_TRUE(restored.returns().equal(at::tensor({1.0, 2.0}, at::kDouble)));
}

TEST(RewardScalerTest, RejectsBadConfigsAndShapes) {
  RewardScalerConfig config;
  config.gamma = 1.5;
  config.clip = 0.0;
  expect_invalid_argument([&] { RewardScaler scaler(config); }, {"gamma=1.5", "clip=0"});
  RewardScaler scaler(half_discount());
  expect_invalid_argument(
      [&] {
        scaler.scale(rows({{1, 2}}), at::zeros({1, 3}), at::zeros({1, 2}));
      },
      {"RewardScaler::scale", "terminated"});
}

}  // namespace
}  // namespace concord::algos
