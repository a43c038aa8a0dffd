// The exact counter: counts, threads, checkpoints, and its refusal to merge across processes.
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

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

// A communicator that fails any operation: the counter must refuse before communicating.
class UnusedCommunicator final : public comm::Communicator {
 public:
  int rank() const override { return 0; }
  int world_size() const override { return 2; }
  std::string backend() const override { return "unused"; }
  std::chrono::milliseconds timeout() const override { return std::chrono::milliseconds(1); }
  std::unique_ptr<comm::Request> allreduce_async(const torch::Tensor&, comm::ReduceOp) override { fail(); }
  std::unique_ptr<comm::Request> broadcast_async(const torch::Tensor&, int) override { fail(); }
  std::unique_ptr<comm::Request> send_async(const torch::Tensor&, int, int) override { fail(); }
  std::unique_ptr<comm::Request> recv_async(const torch::Tensor&, int, int) override { fail(); }
  std::vector<torch::Tensor> allgather(const torch::Tensor&) override { fail(); }
  void reduce_scatter(const torch::Tensor&, const std::vector<torch::Tensor>&, comm::ReduceOp) override { fail(); }
  void barrier() override { fail(); }

 private:
  [[noreturn]] static void fail() { throw comm::CommError("unexpected communication"); }
};

TEST(ExactCounter, RefusesToMergeAcrossProcessesNamingTheSketch) {
  ExactCounter counter(4);
  UnusedCommunicator communicator;
  try {
    counter.merge_increments(communicator);
    FAIL() << "expected std::logic_error";
  } catch (const std::logic_error& error) {
    EXPECT_NE(std::string(error.what()).find("explore.counter = \"sketch\""), std::string::npos);
  }
}

}  // namespace
}  // namespace concord::explore
