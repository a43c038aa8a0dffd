// The inception-style score and class coverage on probability tables worked by hand, and the
// digit judge on real MNIST digits.
#include <memory>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "concord/data/mnist.h"
#include "concord/supervised/sample_quality.h"
#include "learning_outcome.h"

namespace concord::supervised {
namespace {

TEST(SampleQualityTest, ConfidentAndUniformOverTenClassesScoresTen) {
  const torch::Tensor table = torch::eye(10).repeat({7, 1});  // 70 samples, 7 of each class, all certain
  EXPECT_NEAR(inception_score(table), 10.0, 1e-9);
  EXPECT_EQ(class_coverage(table), 10);
}

TEST(SampleQualityTest, AllOneClassScoresOne) {
  torch::Tensor table = torch::zeros({50, 10});
  table.select(1, 3).fill_(1.0);
  EXPECT_NEAR(inception_score(table), 1.0, 1e-9);
  EXPECT_EQ(class_coverage(table), 1);
}

TEST(SampleQualityTest, UncertainSamplesScoreOneAndHalfTheClassesScoreTwo) {
  EXPECT_NEAR(inception_score(torch::full({20, 10}, 0.1)), 1.0, 1e-9);
  // Two classes, half the samples each, certain: exp(log 2) = 2; each class has share 1/2 >= 0.05.
  torch::Tensor two = torch::zeros({40, 10});
  two.narrow(0, 0, 20).select(1, 4).fill_(1.0);
  two.narrow(0, 20, 20).select(1, 8).fill_(1.0);
  EXPECT_NEAR(inception_score(two), 2.0, 1e-9);
  EXPECT_EQ(class_coverage(two), 2);
}

TEST(SampleQualityTest, CoverageCountsOnlyClassesWithAtLeastHalfTheUniformShare) {
  // 100 samples: class 0 has 60, classes 1..8 have 5 each (exactly half of the uniform 10), class 9 none.
  torch::Tensor table = torch::zeros({100, 10});
  table.narrow(0, 0, 60).select(1, 0).fill_(1.0);
  for (int64_t c = 1; c <= 8; ++c) table.narrow(0, 60 + 5 * (c - 1), 5).select(1, c).fill_(1.0);
  EXPECT_EQ(class_coverage(table), 9);
  EXPECT_EQ(class_coverage(table, 0.6), 1);
  EXPECT_THROW(inception_score(torch::zeros({10})), std::invalid_argument);
}

TEST(DigitJudgeLearning, JudgesRealDigitsAsVariedAndRecognisable) {
  const data::TrainTestSplit data = data::load_mnist(data::default_data_dir());
  // The judge is a classifier trained for 300 steps; a seed whose judge falls short gets one retry.
  std::unique_ptr<DigitJudge> good;
  EXPECT_TRUE(test::learns(
      [&](uint64_t seed) {
        auto judge = std::make_unique<DigitJudge>(data, 300, seed);
        const double accuracy = judge->test_accuracy();
        if (accuracy > 0.85 && good == nullptr) good = std::move(judge);
        return accuracy;
      },
      test::LearningBar{0.85, 2, 1}));
  if (good == nullptr) return;
  const DigitJudge& judge = *good;
  const SampleQuality real = judge.score(data.test.images);
  EXPECT_GT(real.inception_score, 6.0);
  EXPECT_EQ(real.covered_classes, 10);
  // A "generator" that draws one digit over and over.
  const SampleQuality collapsed = judge.score(data.test.images.narrow(0, 0, 1).repeat({200, 1, 1, 1}));
  EXPECT_LT(collapsed.inception_score, 1.01);
  EXPECT_EQ(collapsed.covered_classes, 1);
}

}  // namespace
}  // namespace concord::supervised
