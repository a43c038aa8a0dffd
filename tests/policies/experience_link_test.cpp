// The experience link between a learner and its actor ranks, with ranks as threads
// (comm::ThreadGroup): segments and episodes arrive as sent, controls and parameters go back,
// and an actor that fails or stalls is dropped as its Failures say.
#include "concord/policies/runtime/experience_link.h"

#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "concord/comm/thread_group.h"

namespace concord::policies::runtime {
namespace {

using namespace std::chrono_literals;

struct Drop {
  int rank;
  std::string reason;
  int64_t left;
};

ActorRanks::Failures failures(const std::string& on_failure, std::vector<Drop>& drops) {
  return {on_failure, std::chrono::milliseconds(300), "0.3 s (the test's)",
          [&drops](int rank, const std::string& reason, int64_t left) {
            drops.push_back({rank, reason, left});
          }};
}

TEST(ExperienceLink, SegmentsEpisodesControlsAndParametersArriveAsSent) {
  comm::ThreadGroup group(3, std::chrono::seconds(10));
  std::vector<std::thread> actor_threads;
  std::vector<Control> controls(2);
  std::vector<torch::Tensor> received(2);
  for (int rank = 1; rank <= 2; ++rank) {
    actor_threads.emplace_back([&, rank] {
      auto communicator = group.communicator(rank);
      LearnerRank learner(*communicator);
      const torch::Tensor values = torch::arange(6, torch::kFloat32).reshape({2, 3}) * rank;
      const torch::Tensor flags = torch::full({2, 3}, rank, torch::kInt64);
      learner.send({values, flags}, {{1.5 * rank, 4}});
      received[static_cast<size_t>(rank - 1)] = torch::zeros({3});
      controls[static_cast<size_t>(rank - 1)] = learner.receive({received[static_cast<size_t>(rank - 1)]});
      learner.receive({received[static_cast<size_t>(rank - 1)]});  // stop
    });
  }
  auto communicator = group.communicator(0);
  std::vector<Drop> drops;
  ActorRanks actors(*communicator, failures("abort", drops));
  actors.receive_descriptions(2, "segment", true);
  std::vector<Segment> segments(2);
  for (int a = 0; a < 2; ++a) ASSERT_TRUE(actors.post_segment(a, segments[static_cast<size_t>(a)]));
  for (int a = 0; a < 2; ++a) {
    const Segment& segment = segments[static_cast<size_t>(a)];
    ASSERT_TRUE(actors.receive_segment(a, segments[static_cast<size_t>(a)], actors.deadline(), "sent nothing"));
    EXPECT_TRUE(segment.fields[0].equal(torch::arange(6, torch::kFloat32).reshape({2, 3}) * (a + 1)));
    EXPECT_TRUE(segment.fields[1].equal(torch::full({2, 3}, a + 1, torch::kInt64)));
    ASSERT_EQ(segment.finished.size(), 1u);
    EXPECT_EQ(segment.finished[0].first, 1.5 * (a + 1));
    EXPECT_EQ(segment.finished[0].second, 4);
  }
  const torch::Tensor parameters = torch::tensor({1.0f, 2.0f, 3.0f});
  EXPECT_TRUE(actors.answer(0, Control{true, true, 7, 42}, {parameters}));
  EXPECT_TRUE(actors.answer(1, Control{true, false, 3, 42}, {parameters}));
  for (int a = 0; a < 2; ++a) EXPECT_TRUE(actors.settle(a, actors.deadline(), "took nothing"));
  EXPECT_TRUE(actors.any_active());
  for (int a = 0; a < 2; ++a) EXPECT_TRUE(actors.answer(a, Control{}, {}));
  EXPECT_FALSE(actors.any_active()) << "a control that says stop releases the actor";
  for (int a = 0; a < 2; ++a) EXPECT_TRUE(actors.settle(a, actors.deadline(), "took nothing"));
  for (auto& thread : actor_threads) thread.join();

  EXPECT_TRUE(controls[0].go_on);
  EXPECT_TRUE(controls[0].parameters_follow);
  EXPECT_EQ(controls[0].version, 7);
  EXPECT_EQ(controls[0].step, 42);
  EXPECT_TRUE(received[0].equal(parameters));
  EXPECT_FALSE(controls[1].parameters_follow);
  EXPECT_TRUE(received[1].equal(torch::zeros({3}))) << "no parameters follow a control that says none do";
  EXPECT_TRUE(drops.empty());
}

TEST(ExperienceLink, AStalledActorIsDroppedNamingWhatItMissedAndTheLastOneFailsTheRun) {
  comm::ThreadGroup group(3, std::chrono::seconds(10));
  auto communicator = group.communicator(0);
  std::vector<Drop> drops;
  {
    ActorRanks actors(*communicator, failures("continue", drops));
    // Neither actor rank sends a description: both stall.
    EXPECT_THROW(actors.receive_descriptions(1, "segment", false), std::runtime_error);
    ASSERT_EQ(drops.size(), 1u);
    EXPECT_EQ(drops[0].rank, 1);
    EXPECT_EQ(drops[0].left, 1);
    EXPECT_EQ(drops[0].reason,
              "sent no description of its segment within 0.3 s (the test's): stalled, or slower than that");
    EXPECT_FALSE(actors.alive(0));
  }
  drops.clear();
  ActorRanks actors(*communicator, failures("continue", drops));
  actors.drop(1, "the simulator crashed");
  try {
    actors.drop(0, "connection closed");
    FAIL() << "the last actor's failure did not fail the run";
  } catch (const std::runtime_error& error) {
    EXPECT_STREQ(error.what(), "every actor rank failed; the last, actor rank 1 failed: connection closed");
  }
  ASSERT_EQ(drops.size(), 1u);
  EXPECT_EQ(drops[0].rank, 2);
  EXPECT_EQ(drops[0].reason, "the simulator crashed");
}

TEST(ExperienceLink, UnderAbortTheFirstFailureFailsTheRunNamingTheActor) {
  comm::ThreadGroup group(3, std::chrono::seconds(10));
  auto communicator = group.communicator(0);
  std::vector<Drop> drops;
  ActorRanks actors(*communicator, failures("abort", drops));
  try {
    actors.drop(1, "the simulator crashed");
    FAIL() << "not aborted";
  } catch (const std::runtime_error& error) {
    EXPECT_STREQ(error.what(), "actor rank 2 failed: the simulator crashed");
  }
  EXPECT_TRUE(drops.empty());
}

}  // namespace
}  // namespace concord::policies::runtime
