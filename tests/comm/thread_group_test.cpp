#include "concord/comm/thread_group.h"

#include <functional>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace concord::comm {
namespace {

// Runs body(communicator) on one thread per rank and rethrows the first failure.
void on_ranks(ThreadGroup& group, const std::function<void(Communicator&)>& body) {
  std::vector<std::thread> threads;
  std::vector<std::string> errors(static_cast<size_t>(group.world_size()));
  std::vector<std::unique_ptr<Communicator>> communicators;
  for (int rank = 0; rank < group.world_size(); ++rank) communicators.push_back(group.communicator(rank));
  for (int rank = 0; rank < group.world_size(); ++rank) {
    threads.emplace_back([&, rank] {
      try {
        body(*communicators[static_cast<size_t>(rank)]);
      } catch (const std::exception& error) {
        errors[static_cast<size_t>(rank)] = error.what();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const std::string& error : errors) ASSERT_EQ(error, "");
}

TEST(ThreadGroup, AllreduceSumsMaxesAndMinsExactly) {
  ThreadGroup group(3);
  on_ranks(group, [](Communicator& comm) {
    const float r = static_cast<float>(comm.rank());
    torch::Tensor sum = torch::tensor({r, 10.0f * r});
    comm.allreduce(sum, ReduceOp::kSum);
    EXPECT_TRUE(torch::equal(sum, torch::tensor({3.0f, 30.0f})));
    torch::Tensor max = torch::tensor({r, -r});
    comm.allreduce(max, ReduceOp::kMax);
    EXPECT_TRUE(torch::equal(max, torch::tensor({2.0f, 0.0f})));
    torch::Tensor min = torch::tensor({r, -r});
    comm.allreduce(min, ReduceOp::kMin);
    EXPECT_TRUE(torch::equal(min, torch::tensor({0.0f, -2.0f})));
    torch::Tensor mean = torch::tensor({r});
    comm.allreduce_mean(mean);
    EXPECT_FLOAT_EQ(mean.item<float>(), 1.0f);
  });
}

TEST(ThreadGroup, BroadcastAllgatherReduceScatterAndBarrier) {
  ThreadGroup group(3);
  on_ranks(group, [](Communicator& comm) {
    torch::Tensor value = torch::full({2}, static_cast<double>(comm.rank() + 1), torch::kFloat64);
    comm.broadcast(value, 1);
    EXPECT_TRUE(torch::equal(value, torch::full({2}, 2.0, torch::kFloat64)));

    const std::vector<torch::Tensor> gathered = comm.allgather(torch::tensor({comm.rank()}, torch::kInt64));
    ASSERT_EQ(gathered.size(), 3u);
    for (int rank = 0; rank < 3; ++rank) EXPECT_EQ(gathered[static_cast<size_t>(rank)].item<int64_t>(), rank);

    // inputs[j] = rank * 10 + j; rank j receives sum over ranks of (rank * 10 + j) = 30 + 3j.
    std::vector<torch::Tensor> inputs;
    for (int j = 0; j < 3; ++j) inputs.push_back(torch::tensor({static_cast<float>(comm.rank() * 10 + j)}));
    torch::Tensor output = torch::zeros({1});
    comm.reduce_scatter(output, inputs, ReduceOp::kSum);
    EXPECT_FLOAT_EQ(output.item<float>(), 30.0f + 3.0f * static_cast<float>(comm.rank()));
    comm.barrier();
  });
}

TEST(ThreadGroup, TaggedMessagesArriveInOrderPerTag) {
  ThreadGroup group(2);
  on_ranks(group, [](Communicator& comm) {
    if (comm.rank() == 0) {
      comm.send(torch::tensor({1.0f}), 1, /*tag=*/7);
      comm.send(torch::tensor({2.0f}), 1, /*tag=*/8);
      comm.send(torch::tensor({3.0f}), 1, /*tag=*/7);
    } else {
      torch::Tensor message = torch::zeros({1});
      comm.recv(message, 0, 8);  // tags are separate queues
      EXPECT_EQ(message.item<float>(), 2.0f);
      comm.recv(message, 0, 7);
      EXPECT_EQ(message.item<float>(), 1.0f);
      auto pending = comm.recv_async(message, 0, 7);
      pending->wait();
      EXPECT_EQ(message.item<float>(), 3.0f);
    }
  });
}

TEST(ThreadGroup, BytesCommunicatedCountsPayloads) {
  ThreadGroup group(2);
  on_ranks(group, [](Communicator& comm) {
    comm.allreduce(torch::zeros({10}));                     // 40 bytes
    comm.broadcast(torch::zeros({5}, torch::kFloat64), 0);  // 40 bytes
    EXPECT_EQ(comm.bytes_communicated(), 80);
  });
}

TEST(ThreadGroup, AMissingRankTimesOutNamingIt) {
  ThreadGroup group(2, std::chrono::milliseconds(200));
  auto rank0 = group.communicator(0);
  auto rank1 = group.communicator(1);  // exists, but never calls
  try {
    rank0->allreduce(torch::zeros({1}));
    FAIL() << "expected a timeout";
  } catch (const CommTimeout& error) {
    EXPECT_NE(std::string(error.what()).find("rank(s) 1 did not take part"), std::string::npos) << error.what();
  }
}

TEST(ThreadGroup, ARankThatLeftIsAnErrorNotAHang) {
  ThreadGroup group(2, std::chrono::seconds(30));
  auto rank0 = group.communicator(0);
  group.communicator(1).reset();  // rank 1's thread ended
  // A CommError at once, not the CommTimeout that waiting out the 30 s would end in.
  const auto error_kind = [](const std::function<void()>& call) -> std::string {
    try {
      call();
    } catch (const CommTimeout&) {
      return "timeout";
    } catch (const CommError&) {
      return "error";
    }
    return "none";
  };
  torch::Tensor message = torch::zeros({1});
  EXPECT_EQ(error_kind([&] { rank0->recv(message, 1, 0); }), "error");
  EXPECT_EQ(error_kind([&] { rank0->barrier(); }), "error");
}

TEST(ThreadGroup, MismatchedCollectivesAndShapesAreErrors) {
  ThreadGroup group(2, std::chrono::seconds(10));
  auto rank0 = group.communicator(0);
  auto rank1 = group.communicator(1);
  std::string rank1_error;
  std::thread other([&] {
    try {
      rank1->barrier();
    } catch (const CommError& error) {
      rank1_error = error.what();
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // rank 1 is waiting in its barrier
  try {
    rank0->allreduce(torch::zeros({1}));
    FAIL() << "expected a mismatch";
  } catch (const CommError& error) {
    EXPECT_NE(std::string(error.what()).find("called allreduce while another rank called barrier"), std::string::npos)
        << error.what();
  }
  rank0.reset();  // rank 1 learns that rank 0 is gone instead of waiting out its timeout
  other.join();
  EXPECT_NE(rank1_error.find("rank 0 left"), std::string::npos) << rank1_error;

  ThreadGroup pair(2, std::chrono::seconds(5));
  auto sender = pair.communicator(0);
  auto receiver = pair.communicator(1);
  sender->send(torch::zeros({3}), 1, 0);
  torch::Tensor wrong = torch::zeros({2});
  EXPECT_THROW(receiver->recv(wrong, 0, 0), CommError);
}

TEST(ThreadGroup, RejectsBadRanks) {
  EXPECT_THROW(ThreadGroup(0), std::invalid_argument);
  ThreadGroup group(2);
  EXPECT_THROW(group.communicator(2), std::invalid_argument);
  auto first = group.communicator(0);
  EXPECT_THROW(group.communicator(0), std::invalid_argument);
  EXPECT_THROW(first->send(torch::zeros({1}), 5, 0), std::invalid_argument);
}

}  // namespace
}  // namespace concord::comm
