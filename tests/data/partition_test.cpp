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

// The paper's own setup on 60,000 balanced examples (Fashion-MNIST's training set): 200 shards of
// 300, each one label, 2 per client. Every client's label counts are exactly 300 + 300 of two
// labels or 600 of one, every label is spread over its 6,000 rows, and the draw is pinned.
TEST(PartitionTest, PaperNonIidSplitHasExactLabelCounts) {
  const torch::Tensor labels = torch::arange(60000, torch::kInt64).remainder(10);
  const auto parts = label_sorted_shards(labels, 100, 2, 7);
  ASSERT_EQ(parts.size(), 100u);
  torch::Tensor totals = torch::zeros({10}, torch::kInt64);
  int single_label_clients = 0;
  for (const auto& part : parts) {
    ASSERT_EQ(part.size(0), 600);
    const torch::Tensor counts = torch::bincount(labels.index_select(0, part), {}, 10);
    totals += counts;
    const torch::Tensor present = counts.masked_select(counts.gt(0));
    if (present.numel() == 1) {
      EXPECT_EQ(present.item<int64_t>(), 600);
      ++single_label_clients;
    } else {
      ASSERT_EQ(present.numel(), 2);
      EXPECT_TRUE(torch::equal(present, torch::tensor({300, 300}, torch::kInt64))) << present;
    }
  }
  EXPECT_TRUE(torch::equal(totals, torch::full({10}, 6000, torch::kInt64)));
  EXPECT_EQ(single_label_clients, 12);
  const torch::Tensor first = torch::bincount(labels.index_select(0, parts[0]), {}, 10);
  EXPECT_EQ(first[1].item<int64_t>(), 300);
  EXPECT_EQ(first[7].item<int64_t>(), 300);
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
