#include "concord/core/episode_stats.h"

#include <cmath>

#include <gtest/gtest.h>

namespace concord::core {
namespace {

TEST(EpisodeStats, EmptyHasNoRecentMean) {
  EpisodeStats stats;
  EXPECT_EQ(stats.count(), 0);
  EXPECT_FALSE(stats.recent_mean_return().has_value());
  EXPECT_DOUBLE_EQ(stats.mean_return(), 0.0);
}

TEST(EpisodeStats, TotalsAndWindow) {
  EpisodeStats stats(/*window=*/2);
  stats.add(10.0, 10);
  stats.add(20.0, 20);
  stats.add(60.0, 30);
  EXPECT_EQ(stats.count(), 3);
  EXPECT_DOUBLE_EQ(*stats.recent_mean_return(), 40.0);  // (20 + 60) / 2
  EXPECT_DOUBLE_EQ(*stats.recent_mean_length(), 25.0);
  EXPECT_DOUBLE_EQ(stats.mean_return(), 30.0);
  // Population std of {10, 20, 60}: mean 30, squared deviations 400 + 100 + 900 = 1400.
  EXPECT_NEAR(stats.std_return(), std::sqrt(1400.0 / 3.0), 1e-9);
  EXPECT_DOUBLE_EQ(stats.min_return(), 10.0);
  EXPECT_DOUBLE_EQ(stats.max_return(), 60.0);
  EXPECT_DOUBLE_EQ(stats.mean_length(), 20.0);
}

}  // namespace
}  // namespace concord::core
