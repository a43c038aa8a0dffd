// Counts shared across ranks: the count-min sketch's merge of per-interval increments through a
// Communicator is exact (ranks are threads of a comm::ThreadGroup here; processes use the same
// code over Gloo).
#include <memory>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "concord/comm/thread_group.h"
#include "concord/explore/count_min_sketch.h"

namespace concord::explore {
namespace {

// Two ranks (threads of a ThreadGroup) each count their own states and merge twice; after each
// merge both hold exactly the tables of one sketch that counted every state.
TEST(CountMinSketch, MergedCountsAcrossTwoRanksEqualOneSketchOfAllStates) {
  const int64_t bits = 12;
  std::vector<torch::Tensor> first_interval{torch::randint(0, 2, {40, bits}, torch::kUInt8),
                                            torch::randint(0, 2, {25, bits}, torch::kUInt8)};
  std::vector<torch::Tensor> second_interval{torch::randint(0, 2, {10, bits}, torch::kUInt8),
                                             torch::randint(0, 2, {60, bits}, torch::kUInt8)};
  CountMinSketch single(bits, 4, 211);
  single.add(first_interval[0]);
  single.add(first_interval[1]);
  const torch::Tensor after_first = single.cells();
  single.add(second_interval[0]);
  single.add(second_interval[1]);
  const torch::Tensor after_second = single.cells();

  comm::ThreadGroup group(2);
  std::vector<torch::Tensor> merged_first(2), merged_second(2);
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < 2; ++rank) {
    ranks.emplace_back([&, rank] {
      std::unique_ptr<comm::Communicator> communicator = group.communicator(rank);
      CountMinSketch sketch(bits, 4, 211);
      sketch.add(first_interval[static_cast<size_t>(rank)]);
      sketch.merge_increments(*communicator);
      merged_first[static_cast<size_t>(rank)] = sketch.cells();
      sketch.add(second_interval[static_cast<size_t>(rank)]);
      sketch.merge_increments(*communicator);
      merged_second[static_cast<size_t>(rank)] = sketch.cells();
    });
  }
  for (std::thread& rank : ranks) rank.join();
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_TRUE(torch::equal(merged_first[static_cast<size_t>(rank)], after_first)) << "rank " << rank;
    EXPECT_TRUE(torch::equal(merged_second[static_cast<size_t>(rank)], after_second)) << "rank " << rank;
  }
}

}  // namespace
}  // namespace concord::explore
