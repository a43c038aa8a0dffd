#include "concord/data/partition.h"

#include <set>

#include <gtest/gtest.h>

#include "concord/data/batch_sampler.h"

namespace concord::data {
namespace {

TEST(PartitionTest, IidPartsCoverEveryRowOnceWithBalancedSizes) {
  const auto parts = iid_partition(103, 10, 1);
  ASSERT_EQ(parts.size(), 10u);
  std::set<int64_t> seen;
  for (const auto& part : parts) {
    EXPECT_TRUE(part.size(0) == 10 || part.size(0) == 11);
    for (int64_t i = 0; i < part.size(0); ++i) seen.insert(part[i].item<int64_t>());
  }
  EXPECT_EQ(seen.size(), 103u);
  EXPECT_THROW(iid_partition(3, 4, 1), std::invalid_argument);
}

// McMahan et al.'s non-IID split of 10 balanced classes into 100 clients of 2 shards: every
// client holds at most 2 labels, its shards are label-pure, and all rows are used once.
TEST(PartitionTest, LabelSortedShardsGiveEachClientAtMostTwoLabels) {
  const torch::Tensor labels = torch::arange(8000, torch::kInt64).remainder(10);
  const auto parts = label_sorted_shards(labels, 100, 2, 7);
  ASSERT_EQ(parts.size(), 100u);
  std::set<int64_t> seen;
  int clients_with_two_labels = 0;
  for (const auto& part : parts) {
    ASSERT_EQ(part.size(0), 80);
    const torch::Tensor part_labels = labels.index_select(0, part);
    EXPECT_EQ(std::get<0>(torch::_unique(part_labels.slice(0, 0, 40))).numel(), 1);  // a shard is one label
    const int64_t distinct = std::get<0>(torch::_unique(part_labels)).numel();
    EXPECT_LE(distinct, 2);
    clients_with_two_labels += distinct == 2 ? 1 : 0;
    for (int64_t i = 0; i < part.size(0); ++i) seen.insert(part[i].item<int64_t>());
  }
  EXPECT_EQ(seen.size(), 8000u);
  // Random pairing of shards: most clients see two different digits.
  EXPECT_GT(clients_with_two_labels, 70);
}

TEST(ShuffledBatchesTest, EveryEpochVisitsEveryRowOnce) {
  ShuffledBatches batches(10, 4, 3);
  EXPECT_EQ(batches.batches_per_epoch(), 3);
  for (int epoch = 0; epoch < 2; ++epoch) {
    std::set<int64_t> seen;
    for (int b = 0; b < 3; ++b) {
      const torch::Tensor batch = batches.next();
      EXPECT_EQ(batch.size(0), b < 2 ? 4 : 2);
      for (int64_t i = 0; i < batch.size(0); ++i) seen.insert(batch[i].item<int64_t>());
    }
    EXPECT_EQ(seen.size(), 10u);
  }
  EXPECT_EQ(ShuffledBatches(7, 0, 1).next().size(0), 7);  // B = infinity
}

}  // namespace
}  // namespace concord::data
