#include "concord/comm/watchdog.h"

#include <chrono>
#include <future>
#include <memory>
#include <thread>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "concord/comm/communicator.h"
#include "concord/comm/thread_group.h"

namespace concord::comm {
namespace {

using std::chrono::hours;
using std::chrono::seconds;

// Generous bounds on waits that should end at once: a failure hangs no longer than this.
constexpr auto kPatience = seconds(60);

TEST(Watchdog, ADeadlineThatHasPassedFiresOnceAndDisarmSaysSo) {
  Watchdog watchdog;
  int calls = 0;
  std::promise<void> fired;
  {
    const Watchdog::Armed armed = watchdog.arm(Watchdog::Clock::now(), [&] {
      ++calls;
      fired.set_value();
    });
    ASSERT_EQ(fired.get_future().wait_for(kPatience), std::future_status::ready);
    EXPECT_TRUE(watchdog.disarm());
  }
  EXPECT_EQ(calls, 1);
  // Disarmed: a second disarm reports nothing new.
  EXPECT_FALSE(watchdog.disarm());
}

TEST(Watchdog, DisarmedBeforeItsDeadlineItNeverFires) {
  Watchdog watchdog;
  bool called = false;
  {
    const Watchdog::Armed armed = watchdog.arm(Watchdog::Clock::now() + hours(1), [&] { called = true; });
  }  // Armed's destructor disarms
  EXPECT_FALSE(watchdog.disarm());
  EXPECT_FALSE(called);
}

TEST(Watchdog, ArmingAgainReplacesTheDeadlineAndTheFunction) {
  Watchdog watchdog;
  bool first_called = false;
  std::promise<void> second;
  const Watchdog::Armed first = watchdog.arm(Watchdog::Clock::now() + hours(1), [&] { first_called = true; });
  const Watchdog::Armed armed = watchdog.arm(Watchdog::Clock::now(), [&] { second.set_value(); });
  ASSERT_EQ(second.get_future().wait_for(kPatience), std::future_status::ready);
  EXPECT_TRUE(watchdog.disarm());
  EXPECT_FALSE(first_called);
}

TEST(Watchdog, OneWatchdogServesManyDeadlinesInTurn) {
  Watchdog watchdog;
  for (int round = 0; round < 20; ++round) {
    std::promise<void> fired;
    const Watchdog::Armed armed = watchdog.arm(Watchdog::Clock::now(), [&] { fired.set_value(); });
    ASSERT_EQ(fired.get_future().wait_for(kPatience), std::future_status::ready) << "round " << round;
    EXPECT_TRUE(watchdog.disarm());
  }
}

// What the watchdog is for: a receive that no send will match ends in CommAborted when its
// deadline passes, long before the group's own timeout, and the group still works afterwards.
TEST(Watchdog, AbortsAReceiveNobodySendsToAndTheGroupCarriesOn) {
  ThreadGroup group(2, hours(1));
  std::unique_ptr<Communicator> rank0 = group.communicator(0);
  std::unique_ptr<Communicator> rank1 = group.communicator(1);
  torch::Tensor value = torch::zeros({3});
  std::unique_ptr<Request> never = rank0->recv_async(value, 1, 7);
  Watchdog watchdog;
  {
    const Watchdog::Armed armed = watchdog.arm(Watchdog::Clock::now(), [&] { never->abort(); });
    EXPECT_THROW(never->wait(), CommAborted);
  }
  torch::Tensor received = torch::zeros({3});
  std::thread sender([&] { rank1->send(torch::tensor({1.0f, 2.0f, 3.0f}), 0, 8); });
  rank0->recv(received, 1, 8);
  sender.join();
  EXPECT_TRUE(torch::equal(received, torch::tensor({1.0f, 2.0f, 3.0f})));
}

}  // namespace
}  // namespace concord::comm
