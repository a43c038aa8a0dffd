// The exact counter: counts, threads, checkpoints, and its refusal to merge across processes.
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "comm/unused_communicator.h"
#include "concord/comm/communicator.h"
#include "concord/explore/exact_counter.h"

namespace concord::explore {
namespace {

TEST(ExactCounter, CountsEveryDistinctCodeExactly) {
  ExactCounter counter(/*bits=*/3);
  counter.add(torch::tensor({{1, 0, 1}, {1, 0, 1}, {0, 0, 0}}, torch::kUInt8));
  EXPECT_EQ(counter.size(), 2);
  EXPECT_TRUE(torch::equal(counter.counts(torch::tensor({{1, 0, 1}, {0, 0, 0}, {1, 1, 1}}, torch::kUInt8)),
                           torch::tensor({2, 1, 0}, torch::kInt64)));
}

TEST(ExactCounter, ThreadsShareOneTable) {
  ExactCounter counter(8);
  const torch::Tensor batch = torch::eye(8, torch::kUInt8);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 100; ++i) counter.add(batch);
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_TRUE(torch::equal(counter.counts(batch), torch::full({8}, 400, torch::kInt64)));
}

TEST(ExactCounter, SavesAndRestoresItsCounts) {
  ExactCounter counter(4);
  const torch::Tensor batch = torch::tensor({{1, 0, 0, 1}, {1, 0, 0, 1}, {0, 1, 1, 0}}, torch::kUInt8);
  counter.add(batch);
  core::Checkpoint checkpoint;
  counter.save(checkpoint, "explore/counts/");
  ExactCounter restored(4);
  restored.load(checkpoint, "explore/counts/");
  EXPECT_TRUE(torch::equal(restored.counts(batch), counter.counts(batch)));
  ExactCounter other_width(5);
  EXPECT_THROW(other_width.load(checkpoint, "explore/counts/"), core::CheckpointError);
}

TEST(ExactCounter, RefusesToMergeAcrossProcessesNamingTheSketch) {
  ExactCounter counter(4);
  comm::test::UnusedCommunicator communicator;  // the counter must refuse before communicating
  try {
    counter.merge_increments(communicator);
    FAIL() << "expected std::logic_error";
  } catch (const std::logic_error& error) {
    EXPECT_NE(std::string(error.what()).find("explore.counter = \"sketch\""), std::string::npos);
  }
}

}  // namespace
}  // namespace concord::explore
