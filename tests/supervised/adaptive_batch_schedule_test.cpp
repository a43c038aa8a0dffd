// ABS / ABSA's decisions on scripted eigenvalue sequences.
#include "concord/supervised/adaptive_batch_schedule.h"

#include <stdexcept>

#include <gtest/gtest.h>

namespace concord::supervised {
namespace {

AdaptiveBatchOptions options(int64_t max_ratio = 16, int64_t force_after = 0) {
  AdaptiveBatchOptions o;
  o.initial_batch = 32;
  o.initial_learning_rate = 0.05;
  o.max_ratio = max_ratio;
  o.force_after_epochs = force_after;
  return o;
}

TEST(AdaptiveBatchSchedule, DoublesBatchAndLearningRateWhenTheEigenvalueHalvesFromItsMaximum) {
  AdaptiveBatchSchedule schedule(options());
  // The reference is the largest eigenvalue since the last doubling: 10, then 12.
  EXPECT_FALSE(schedule.end_of_epoch(1, 10.0));
  EXPECT_FALSE(schedule.end_of_epoch(2, 12.0));
  EXPECT_FALSE(schedule.end_of_epoch(3, 6.5));  // above 12 / 2
  EXPECT_TRUE(schedule.end_of_epoch(4, 6.0));   // 12 / 2
  EXPECT_EQ(schedule.batch_size(), 64);
  EXPECT_DOUBLE_EQ(schedule.learning_rate(), 0.1);
  // After a doubling the reference restarts at that epoch's eigenvalue (6).
  EXPECT_FALSE(schedule.end_of_epoch(5, 3.5));
  EXPECT_TRUE(schedule.end_of_epoch(6, 3.0));
  EXPECT_EQ(schedule.batch_size(), 128);
  EXPECT_DOUBLE_EQ(schedule.learning_rate(), 0.2);
  EXPECT_EQ(schedule.doublings(), 2);
}

TEST(AdaptiveBatchSchedule, RisingCurvatureNeverDoubles) {
  AdaptiveBatchSchedule schedule(options());
  for (int epoch = 1; epoch <= 10; ++epoch) EXPECT_FALSE(schedule.end_of_epoch(epoch, epoch * 1.0));
  EXPECT_EQ(schedule.batch_size(), 32);
}

TEST(AdaptiveBatchSchedule, StopsAtTheMaximumRatio) {
  AdaptiveBatchSchedule schedule(options(4));
  double eigenvalue = 16.0;
  for (int epoch = 1; epoch <= 6; ++epoch, eigenvalue /= 2.0) schedule.end_of_epoch(epoch, eigenvalue);
  EXPECT_EQ(schedule.batch_size(), 128);  // 32 x 4
  EXPECT_DOUBLE_EQ(schedule.learning_rate(), 0.2);
  EXPECT_EQ(schedule.doublings(), 2);
}

TEST(AdaptiveBatchSchedule, TheLearningRateStopsAtItsOwnCap) {
  AdaptiveBatchOptions capped = options(16, 1);
  capped.max_learning_rate_ratio = 4;
  AdaptiveBatchSchedule schedule(capped);
  for (int epoch = 1; epoch <= 4; ++epoch) EXPECT_TRUE(schedule.end_of_epoch(epoch, 5.0));
  EXPECT_EQ(schedule.batch_size(), 512);
  EXPECT_DOUBLE_EQ(schedule.learning_rate(), 0.2);  // 0.05 x 4
}

TEST(AdaptiveBatchSchedule, ForcesADoublingAfterEpochsWithoutOne) {
  AdaptiveBatchSchedule schedule(options(16, 3));
  EXPECT_FALSE(schedule.end_of_epoch(1, 5.0));
  EXPECT_FALSE(schedule.end_of_epoch(2, 5.0));
  EXPECT_TRUE(schedule.end_of_epoch(3, 5.0));
  EXPECT_FALSE(schedule.end_of_epoch(4, 5.0));
  EXPECT_FALSE(schedule.end_of_epoch(5, 5.0));
  EXPECT_TRUE(schedule.end_of_epoch(6, 5.0));
  EXPECT_EQ(schedule.batch_size(), 128);
}

TEST(AdaptiveBatchSchedule, AdversarialShareHalvesAtEachDoublingAndStopsAtMidTraining) {
  AdaptiveBatchOptions absa = options();
  absa.adversarial_share = 0.5;
  absa.adversarial_until_epoch = 4;
  AdaptiveBatchSchedule schedule(absa);
  EXPECT_DOUBLE_EQ(schedule.adversarial_share(0), 0.5);
  schedule.end_of_epoch(1, 8.0);
  EXPECT_DOUBLE_EQ(schedule.adversarial_share(1), 0.5);
  schedule.end_of_epoch(2, 4.0);  // doubles
  EXPECT_DOUBLE_EQ(schedule.adversarial_share(2), 0.25);
  schedule.end_of_epoch(3, 2.0);  // doubles
  EXPECT_DOUBLE_EQ(schedule.adversarial_share(3), 0.125);
  EXPECT_DOUBLE_EQ(schedule.adversarial_share(4), 0.0);
  EXPECT_DOUBLE_EQ(schedule.adversarial_share(9), 0.0);
}

TEST(AdaptiveBatchSchedule, BadOptionsAreRefused) {
  AdaptiveBatchOptions bad = options(0);
  EXPECT_THROW(AdaptiveBatchSchedule{bad}, std::invalid_argument);
  bad = options();
  bad.adversarial_share = 1.0;
  EXPECT_THROW(AdaptiveBatchSchedule{bad}, std::invalid_argument);
}

}  // namespace
}  // namespace concord::supervised
