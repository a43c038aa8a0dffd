// The parts every concurrent policy is wired from (src/concord/policies/runtime/).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <torch/torch.h>

#include "concord/core/torch_thread.h"
#include "concord/policies/policy.h"
#include "concord/policies/runtime/channel.h"
#include "concord/policies/runtime/checkpoint_gate.h"
#include "concord/policies/runtime/parameter_versions.h"
#include "concord/policies/runtime/training_queue.h"
#include "concord/policies/runtime/workers.h"

namespace concord::policies::runtime {
namespace {

using ::testing::HasSubstr;
using ::testing::StrEq;
using ::testing::ThrowsMessage;

constexpr double kLong = 60.0;   // a wait that must not run out
constexpr double kShort = 0.05;  // a wait that is meant to

struct Custom : std::runtime_error {
  using std::runtime_error::runtime_error;
};
TEST(Workers, ThreadsEndAloneAndJoinRethrowsNothing) {
  Workers workers("test", kLong, "policy.test.wait_timeout_seconds");
  std::atomic<int> ran{0};
  for (uint64_t i = 0; i < 3; ++i) workers.start("worker " + std::to_string(i), i, [&] { ++ran; });
  workers.join();
  EXPECT_EQ(ran.load(), 3);
  EXPECT_FALSE(workers.failed());
}

TEST(Workers, AThreadsErrorStopsTheOthersAndIsRethrownNamingIt) {
  Workers workers("test", kLong, "policy.test.wait_timeout_seconds");
  auto& channel = workers.make<Channel<int>>("numbers", 1, "the producer", "the consumer");
  std::atomic<bool> consumer_saw_close{false};
  workers.start("consumer", 0, [&] {
    int item = 0;
    while (channel.pop(item)) {
    }
    consumer_saw_close = true;
  });
  workers.start("actor 1 of 2", 1, [] { throw std::invalid_argument("the simulator crashed"); });
  EXPECT_THAT([&] { workers.join(); },
              ThrowsMessage<std::runtime_error>(StrEq("policy 'test': actor 1 of 2 failed: the simulator crashed")));
  EXPECT_TRUE(consumer_saw_close.load());
  EXPECT_TRUE(workers.stopping());
}

TEST(Workers, AnUnnamedThreadsErrorNamesOnlyThePolicy) {
  Workers workers("apex", kLong, "key");
  workers.start("", 0, [] { throw std::runtime_error("actor rank 2 failed: connection closed"); });
  EXPECT_THAT([&] { workers.join(); },
              ThrowsMessage<std::runtime_error>(StrEq("policy 'apex': actor rank 2 failed: connection closed")));
}

TEST(Workers, ANonFiniteMetricPassesAsThrown) {
  Workers workers("test", kLong, "key");
  workers.start("worker 0", 0, [] { throw NonFiniteMetric("losses/fake became nan at update 3 (step 12)"); });
  EXPECT_THAT([&] { workers.join(); },
              ThrowsMessage<NonFiniteMetric>(StrEq("losses/fake became nan at update 3 (step 12)")));
}

TEST(Workers, TheFirstFailureWins) {
  Workers workers("test", kLong, "key");
  std::atomic<bool> first_recorded{false};
  workers.start("first", 0, [&] {
    first_recorded = true;
    throw std::runtime_error("first");
  });
  while (!workers.failed()) std::this_thread::yield();
  workers.start("second", 1, [] { throw std::runtime_error("second"); });
  EXPECT_THAT([&] { workers.join(); }, ThrowsMessage<std::runtime_error>(HasSubstr("first failed: first")));
}

TEST(Workers, RunStopsTheThreadsWhenTheCallersPartEnds) {
  Workers workers("test", kLong, "key");
  auto& channel = workers.make<Channel<int>>("numbers", 2, "the producer", "the learner");
  std::atomic<int> pushed{0};
  workers.start("producer", 0, [&] {
    for (int i = 0;; ++i) {
      channel.push(i);  // throws Stopped once the run stops
      ++pushed;
    }
  });
  std::vector<int> taken;
  workers.run([&] {
    int item = 0;
    for (int k = 0; k < 5 && channel.pop(item); ++k) taken.push_back(item);
  });
  EXPECT_EQ(taken, (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_GE(pushed.load(), 5);
}

TEST(Workers, RunRethrowsTheCallersErrorAsThrown) {
  Workers workers("test", kLong, "key");
  auto& channel = workers.make<Channel<int>>("numbers", 1, "the producer", "the learner");
  workers.start("producer", 0, [&] {
    for (;;) channel.push(1);
  });
  EXPECT_THROW(workers.run([] { throw Custom("losses/fake became inf"); }), Custom);
}

TEST(Workers, ATimeoutReachesTheCallerAsThrown) {
  Workers workers("apex", kShort, "policy.apex.wait_timeout_seconds");
  auto& channel = workers.make<Channel<int>>("transitions", 1, "actor 0", "the learner");
  workers.start("the learner", 0, [&] {
    int item = 0;
    channel.pop(item);
  });
  EXPECT_THAT([&] { workers.join(); },
              ThrowsMessage<TimedOut>(StrEq("policy 'apex': the learner waited 0.05 s for actor 0 to fill the "
                                            "transitions (raise policy.apex.wait_timeout_seconds if the machine is "
                                            "just slow)")));
}

TEST(Workers, EachThreadDrawsFromItsOwnSeededGenerator) {
  std::vector<double> first(2), second(2);
  for (std::vector<double>* draws : {&first, &second}) {
    Workers workers("test", kLong, "key");
    for (uint64_t i = 0; i < 2; ++i) {
      workers.start("worker", core::thread_seed(7, i), [draws, i] {
        (*draws)[i] = torch::rand({1}, *core::thread_generator(torch::kCPU)).item<double>();
      });
    }
    workers.join();
  }
  EXPECT_EQ(first, second);
  EXPECT_NE(first[0], first[1]);
}

TEST(Workers, OnStopRegisteredAfterTheStopRunsAtOnce) {
  Workers workers("test", kLong, "key");
  workers.stop();
  bool woken = false;
  workers.on_stop([&] { woken = true; });
  EXPECT_TRUE(woken);
}

TEST(Channel, AnEmptyChannelTimesOutNamingThePolicyTheWaiterAndTheChannel) {
  Workers workers("async_learner", kShort, "policy.async_learner.wait_timeout_seconds");
  auto& channel = workers.make<Channel<int>>("rollouts", 1, "the collector", "the learner");
  int item = 0;
  EXPECT_THAT([&] { channel.pop(item); },
              ThrowsMessage<std::runtime_error>(
                  StrEq("policy 'async_learner': the learner waited 0.05 s for the collector to fill the rollouts "
                        "(raise policy.async_learner.wait_timeout_seconds if the machine is just slow)")));
}

TEST(Channel, AFullChannelTimesOutNamingTheProducer) {
  Workers workers("apex", kShort, "policy.apex.wait_timeout_seconds");
  auto& channel = workers.make<Channel<int>>("transitions", 1, "actor 0", "the learner");
  channel.push(1);
  EXPECT_THAT([&] { channel.push(2); },
              ThrowsMessage<std::runtime_error>(HasSubstr("actor 0 waited 0.05 s for the learner to take from the "
                                                          "transitions")));
}

TEST(Channel, AClosedChannelDrainsThenSaysSo) {
  Workers workers("test", kLong, "key");
  auto& channel = workers.make<Channel<int>>("numbers", 3, "a", "b");
  channel.push(1);
  channel.push(2);
  channel.close();
  EXPECT_THROW(channel.push(3), Stopped);
  int item = 0;
  EXPECT_TRUE(channel.pop(item));
  EXPECT_EQ(item, 1);
  EXPECT_TRUE(channel.pop(item));
  EXPECT_EQ(item, 2);
  EXPECT_FALSE(channel.pop(item));
}

TEST(Channel, ASpareThreadsIdleWaitIsNoError) {
  Workers workers("test", kShort, "key");
  auto& channel = workers.make<Channel<int>>("numbers", 2, "a", "b");
  int item = 0;
  EXPECT_EQ(channel.try_pop(item), Popped::kIdle);
  channel.push(7);
  std::vector<int> items;
  EXPECT_EQ(channel.try_pop_batch(items, 4), Popped::kItem);
  EXPECT_EQ(items, std::vector<int>{7});
  channel.close();
  EXPECT_EQ(channel.try_pop(item), Popped::kClosed);
}

TEST(Channel, AWaitThatRunsOutAfterTheStopIsNoError) {
  Workers workers("test", kShort, "key");
  auto& channel = workers.make<Channel<int>>("numbers", 1, "a", "b");
  channel.push(1);
  workers.stop();
  EXPECT_THROW(channel.push(2), Stopped);  // closed by the stop
}

TEST(ParameterVersions, AReaderGetsExactlyTheVersionItAsksFor) {
  Workers workers("test", kLong, "key");
  auto& versions = workers.make<ParameterVersions<int64_t>>(
      2, [] { return int64_t{-1}; }, "the collector");
  versions.publish(0, [](int64_t& slot) { slot = 100; });
  std::vector<int64_t> seen;
  workers.start("collector", 0, [&] {
    for (int64_t v = 0; v < 5; ++v) versions.read(v, [&](int64_t& slot) { seen.push_back(slot); });
  });
  for (int64_t v = 1; v < 5; ++v) {
    // Never more than one version ahead of the reader: two slots hold it.
    while (static_cast<int64_t>(seen.size()) < v) std::this_thread::yield();
    versions.publish(v, [v](int64_t& slot) { slot = 100 + v; });
  }
  workers.join();
  EXPECT_EQ(seen, (std::vector<int64_t>{100, 101, 102, 103, 104}));
  EXPECT_EQ(versions.latest(), 4);
}

TEST(ParameterVersions, AReaderOfTheNewestTakesWhateverIsThere) {
  Workers workers("test", kLong, "key");
  auto& versions = workers.make<ParameterVersions<int>>(
      1, [] { return 0; }, "an actor");
  versions.publish(4, [](int& slot) { slot = 40; });
  int seen = 0;
  EXPECT_EQ(versions.read_newest([&](int& slot) { seen = slot; }), 4);
  EXPECT_EQ(seen, 40);
  versions.publish(5, [](int& slot) { slot = 50; });
  EXPECT_EQ(versions.read_newest([&](int& slot) { seen = slot; }), 5);
  EXPECT_EQ(seen, 50);
}

TEST(ParameterVersions, AReaderThatFellBehindIsAnError) {
  Workers workers("test", kLong, "key");
  auto& versions = workers.make<ParameterVersions<int>>(
      2, [] { return 0; }, "the collector");
  for (int64_t v = 0; v < 3; ++v) versions.publish(v, [](int&) {});
  EXPECT_THAT([&] { versions.read(0, [](int&) {}); },
              ThrowsMessage<std::logic_error>(
                  StrEq("policy 'test': parameters of update 0 were overwritten by those of update 2 before the "
                        "collector read them")));
}

TEST(ParameterVersions, AVersionThatNeverComesTimesOut) {
  Workers workers("async_learner", kShort, "policy.async_learner.wait_timeout_seconds");
  auto& versions = workers.make<ParameterVersions<int>>(
      1, [] { return 0; }, "the collector", /*spin_seconds=*/0.001);
  versions.publish(0, [](int&) {});
  EXPECT_THAT([&] { versions.read(1, [](int&) {}); },
              ThrowsMessage<std::runtime_error>(HasSubstr(
                  "the collector waited 0.05 s for the learner's parameters of update 1 (raise policy.async_learner")));
}

TEST(ParameterVersions, TheStopWakesAWaitingReader) {
  Workers workers("test", kLong, "key");
  auto& versions = workers.make<ParameterVersions<int>>(
      1, [] { return 0; }, "the collector");
  std::atomic<bool> stopped{false};
  workers.start("collector", 0, [&] {
    try {
      versions.read(1, [](int&) {});
    } catch (const Stopped&) {
      stopped = true;
    }
  });
  workers.stop_and_join();
  EXPECT_TRUE(stopped.load());
}

TEST(CheckpointGate, ACheckpointWaitsForTheUnitsInProgressAndHoldsOffNewOnes) {
  Workers workers("test", kLong, "key");
  auto& gate = workers.make<CheckpointGate>("the collector", "a rollout");
  std::atomic<int> inside{0};
  std::atomic<bool> release{false}, entered{false};
  std::atomic<int> units_during_checkpoint{-1};
  workers.start("collector", 0, [&] {
    gate.unit([&] {
      ++inside;
      entered = true;
      while (!release.load()) std::this_thread::yield();
      --inside;
    });
  });
  while (!entered.load()) std::this_thread::yield();
  std::thread checkpoint([&] { gate.paused([&] { units_during_checkpoint = inside.load(); }); });
  release = true;
  checkpoint.join();
  workers.join();
  EXPECT_EQ(units_during_checkpoint.load(), 0);
}

TEST(CheckpointGate, AUnitThatOutlastsTheTimeoutFailsTheCheckpointNamingIt) {
  Workers workers("hogwild", kShort, "policy.hogwild.wait_timeout_seconds");
  auto& gate = workers.make<CheckpointGate>("worker 0", "an update");
  std::atomic<bool> release{false}, entered{false};
  workers.start("worker 0", 0, [&] {
    gate.unit([&] {
      entered = true;
      while (!release.load()) std::this_thread::yield();
    });
  });
  while (!entered.load()) std::this_thread::yield();
  EXPECT_THAT(
      [&] { gate.paused([] {}); },
      ThrowsMessage<std::runtime_error>(HasSubstr("a checkpoint waited 0.05 s for an update in progress to end")));
  release = true;
  workers.join();
}

// Per producer: every batch is the next unit of each producer in producer order, whichever pushed
// first, and a producer's slots free only once its unit was learned from.
TEST(TrainingQueue, PerProducerBatchesAreRoundsInProducerOrder) {
  Workers workers("test", kShort, "policy.test.wait_timeout_seconds");
  auto& queue = workers.make<TrainingQueue<int>>(2, true, 1, 2, "agent", "a trainer");
  ASSERT_TRUE(queue.take_slot(1, "agent 1"));
  queue.push(1, 10);
  ASSERT_TRUE(queue.take_slot(0, "agent 0"));
  queue.push(0, 0);
  EXPECT_THAT([&] { queue.take_slot(0, "agent 0"); },
              ThrowsMessage<std::runtime_error>(
                  HasSubstr("agent 0 waited 0.05 s for the training slots of agent 0 to free up")));
  queue.close();
  std::vector<std::vector<int>> batches;
  queue.consume([] { return true; },
                [&](std::vector<int>& batch) {
                  EXPECT_EQ(queue.size(), 0u);
                  batches.push_back(batch);
                });
  EXPECT_EQ(batches, (std::vector<std::vector<int>>{{0, 10}}));
  EXPECT_TRUE(queue.take_slot(0, "agent 0"));  // freed by the learning
}

// Pooled: batches of batch_size in arrival order, the last one short, and closed slots end the
// producers.
TEST(TrainingQueue, PooledBatchesTakeUnitsAsTheyArrive) {
  Workers workers("test", kLong, "key");
  auto& queue = workers.make<TrainingQueue<int>>(2, false, 3, 2, "agent", "a trainer");
  for (int unit : {7, 3, 5}) {
    ASSERT_TRUE(queue.take_slot(unit % 2, "agent"));
    queue.push(unit % 2, unit);
  }
  EXPECT_EQ(queue.size(), 3u);
  queue.close_slots();
  EXPECT_FALSE(queue.take_slot(0, "agent 0"));
  queue.close();
  std::vector<std::vector<int>> batches;
  queue.consume([] { return true; }, [&](std::vector<int>& batch) { batches.push_back(batch); });
  EXPECT_EQ(batches, (std::vector<std::vector<int>>{{7, 3}, {5}}));
}

}  // namespace
}  // namespace concord::policies::runtime
