#include "concord/nn/running_mean_std.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

namespace concord::nn {
namespace {

constexpr double kExact = 1e-12;

// Statistics that start from nothing, so they are exactly those of all samples seen so far.
RunningMeanStdConfig pooled_config(std::vector<int64_t> shape) {
  RunningMeanStdConfig config;
  config.shape = std::move(shape);
  config.initial_count = 0.0;
  return config;
}

torch::Tensor doubles(std::initializer_list<std::initializer_list<double>> rows) {
  std::vector<double> flat;
  int64_t width = 0;
  for (const auto& row : rows) {
    flat.insert(flat.end(), row.begin(), row.end());
    width = static_cast<int64_t>(row.size());
  }
  return torch::tensor(flat, torch::kFloat64).reshape({static_cast<int64_t>(rows.size()), width});
}

void expect_stats(const RunningMeanStd& rms, std::vector<double> mean, std::vector<double> var, double count) {
  ASSERT_EQ(rms->mean().numel(), static_cast<int64_t>(mean.size()));
  for (size_t i = 0; i < mean.size(); ++i) {
    EXPECT_NEAR(rms->mean()[i].item<double>(), mean[i], kExact) << "mean[" << i << "]";
    EXPECT_NEAR(rms->var()[i].item<double>(), var[i], kExact) << "var[" << i << "]";
  }
  EXPECT_NEAR(rms->count(), count, kExact);
}

TEST(RunningMeanStdTest, StartsAtMeanZeroVarOne) {
  RunningMeanStdConfig config;
  config.shape = {3};
  RunningMeanStd rms(config);
  expect_stats(rms, {0, 0, 0}, {1, 1, 1}, 1e-4);
  EXPECT_EQ(rms->mean().scalar_type(), torch::kFloat64);
  // Buffers, not parameters: saved with a model, never trained.
  EXPECT_TRUE(rms->parameters().empty());
  EXPECT_THAT(rms->named_buffers().keys(), ::testing::ElementsAre("mean", "var", "count"));
}

// Three batches of 2-dim samples; each step's statistics are those of all samples so far
// (population variance):
//   after [1 10], [3 20]:                 mean [2, 15],  var [1, 25]
//   after + [5 30]:                       column 0 {1, 3, 5}: mean 3, var (4 + 0 + 4) / 3 = 8/3;
//                                         column 1 {10, 20, 30}: mean 20, var 200/3
//   after + [-1 0], [3 20], [7 40]:       column 0 {1, 3, 5, -1, 3, 7}: mean 18 / 6 = 3,
//                                           var (4 + 0 + 4 + 16 + 0 + 16) / 6 = 20/3;
//                                         column 1 {10, 20, 30, 0, 20, 40}: mean 120 / 6 = 20,
//                                           var (100 + 0 + 100 + 400 + 0 + 400) / 6 = 500/3
TEST(RunningMeanStdTest, ChanUpdateMatchesHandComputedPooledStatistics) {
  RunningMeanStd rms(pooled_config({2}));
  rms->update(doubles({{1, 10}, {3, 20}}));
  expect_stats(rms, {2, 15}, {1, 25}, 2);
  rms->update(doubles({{5, 30}}));
  expect_stats(rms, {3, 20}, {8.0 / 3.0, 200.0 / 3.0}, 3);
  rms->update(doubles({{-1, 0}, {3, 20}, {7, 40}}).to(torch::kFloat32));  // any dtype
  expect_stats(rms, {3, 20}, {20.0 / 3.0, 500.0 / 3.0}, 6);

  // The same samples in one batch give the same statistics.
  RunningMeanStd at_once(pooled_config({2}));
  at_once->update(doubles({{1, 10}, {3, 20}, {5, 30}, {-1, 0}, {3, 20}, {7, 40}}));
  expect_stats(at_once, {3, 20}, {20.0 / 3.0, 500.0 / 3.0}, 6);
}

// Gymnasium's pseudo-count: the prior (count 1e-4, mean 0, var 1) combined with the batch
// {1, 3} (n 2, mean 2, var 1):
//   mean = 0 + (2 - 0) * 2 / 2.0001
//   var  = (1 * 1e-4 + 1 * 2 + (2 - 0)^2 * 1e-4 * 2 / 2.0001) / 2.0001
TEST(RunningMeanStdTest, InitialPseudoCountIsGymnasiums) {
  RunningMeanStdConfig config;
  config.shape = {1};
  RunningMeanStd rms(config);
  rms->update(doubles({{1}, {3}}));
  expect_stats(rms, {2.0 * 2.0 / 2.0001}, {(1e-4 + 2.0 + 4.0 * 1e-4 * 2.0 / 2.0001) / 2.0001}, 2.0001);
}

TEST(RunningMeanStdTest, NormalizeSubtractsMeanDividesByStdAndClips) {
  RunningMeanStd rms(pooled_config({2}));
  rms->update(doubles({{1, 10}, {3, 20}, {5, 30}, {-1, 0}, {3, 20}, {7, 40}}));
  // mean [3, 20], var [20/3, 500/3]; one std above the mean, and one far below it (clipped).
  const double std0 = std::sqrt(20.0 / 3.0 + 1e-8);
  const double std1 = std::sqrt(500.0 / 3.0 + 1e-8);
  const torch::Tensor x = doubles({{3 + std0, 20 - 100 * std1}, {3, 20 + 0.5 * std1}});
  const torch::Tensor y = rms->normalize(x);
  EXPECT_EQ(y.scalar_type(), torch::kFloat64);
  EXPECT_NEAR(y[0][0].item<double>(), 1.0, kExact);
  EXPECT_NEAR(y[0][1].item<double>(), -10.0, kExact);
  EXPECT_NEAR(y[1][0].item<double>(), 0.0, kExact);
  EXPECT_NEAR(y[1][1].item<double>(), 0.5, kExact);
  // float32 in, float32 out; any number of leading dimensions.
  const torch::Tensor y32 = rms->normalize(x.to(torch::kFloat32).reshape({1, 2, 2}));
  EXPECT_EQ(y32.scalar_type(), torch::kFloat32);
  EXPECT_TRUE(torch::allclose(y32.reshape({2, 2}).to(torch::kFloat64), y, 1e-6, 1e-6));

  // A custom clip.
  RunningMeanStdConfig config = pooled_config({2});
  config.clip = 0.25;
  RunningMeanStd tight(config);
  tight->update(doubles({{1, 10}, {3, 20}, {5, 30}, {-1, 0}, {3, 20}, {7, 40}}));
  EXPECT_NEAR(tight->normalize(x)[1][1].item<double>(), 0.25, kExact);
}

TEST(RunningMeanStdTest, ScalarShape) {
  RunningMeanStd rms(pooled_config({}));
  rms->update(torch::tensor({1.0, 2.0, 3.0, 4.0}));
  EXPECT_NEAR(rms->mean().item<double>(), 2.5, kExact);
  EXPECT_NEAR(rms->var().item<double>(), 1.25, kExact);
  EXPECT_NEAR(rms->std().item<double>(), std::sqrt(1.25 + 1e-8), kExact);
  EXPECT_NEAR(rms->normalize(torch::tensor({2.5})).item<double>(), 0.0, kExact);
}

TEST(RunningMeanStdTest, CloneIsIndependent) {
  RunningMeanStd rms(pooled_config({2}));
  rms->update(doubles({{1, 10}, {3, 20}}));
  auto copy = std::dynamic_pointer_cast<RunningMeanStdImpl>(rms->clone());
  ASSERT_NE(copy, nullptr);
  rms->update(doubles({{100, 100}}));
  EXPECT_NEAR(copy->mean()[0].item<double>(), 2.0, kExact);
  EXPECT_NEAR(copy->count(), 2.0, kExact);
}

TEST(RunningMeanStdTest, RejectsBadShapesAndConfigs) {
  RunningMeanStd rms(pooled_config({2}));
  EXPECT_THROW(rms->update(torch::zeros({4, 3})), std::invalid_argument);
  EXPECT_THROW(rms->update(torch::zeros({0, 2})), std::invalid_argument);
  EXPECT_THROW(rms->update(torch::zeros({2})), std::invalid_argument);
  EXPECT_THROW(rms->normalize(torch::zeros({4, 3})), std::invalid_argument);

  RunningMeanStdConfig bad;
  bad.shape = {0};
  bad.clip = 0.0;
  bad.initial_count = -1.0;
  try {
    RunningMeanStd model(bad);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& error) {
    EXPECT_THAT(error.what(), ::testing::HasSubstr("shape=[0]"));
    EXPECT_THAT(error.what(), ::testing::HasSubstr("clip=0"));
    EXPECT_THAT(error.what(), ::testing::HasSubstr("initial_count=-1"));
  }
}

}  // namespace
}  // namespace concord::nn
