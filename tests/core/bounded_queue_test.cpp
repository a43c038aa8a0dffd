#include "concord/core/bounded_queue.h"

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace concord::core {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

TEST(BoundedQueue, HoldsCapacityItemsThenTimesOut) {
  BoundedQueue<int> queue(2, "test queue");
  EXPECT_EQ(queue.push(1, milliseconds(0)), QueueStatus::kOk);
  EXPECT_EQ(queue.push(2, milliseconds(0)), QueueStatus::kOk);
  const auto start = Clock::now();
  EXPECT_EQ(queue.push(3, milliseconds(50)), QueueStatus::kTimedOut);
  EXPECT_GE(Clock::now() - start, milliseconds(45));
  EXPECT_EQ(queue.size(), 2u);
  int out = 0;
  EXPECT_EQ(queue.pop(out, milliseconds(0)), QueueStatus::kOk);
  EXPECT_EQ(out, 1);
  EXPECT_EQ(queue.pop(out, milliseconds(0)), QueueStatus::kOk);
  EXPECT_EQ(out, 2);
  EXPECT_EQ(queue.pop(out, milliseconds(20)), QueueStatus::kTimedOut);
  EXPECT_THROW(BoundedQueue<int>(0, "empty"), std::invalid_argument);
}

TEST(BoundedQueue, PopBatchTakesWhateverIsThereUpToTheMaximum) {
  BoundedQueue<int> queue(8, "test queue");
  for (int i = 0; i < 5; ++i) queue.push(i, milliseconds(0));
  std::vector<int> batch;
  EXPECT_EQ(queue.pop_batch(batch, 3, milliseconds(0)), QueueStatus::kOk);
  EXPECT_EQ(batch, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(queue.pop_batch(batch, 3, milliseconds(0)), QueueStatus::kOk);
  EXPECT_EQ(batch, (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(queue.pop_batch(batch, 3, milliseconds(10)), QueueStatus::kTimedOut);
}

TEST(BoundedQueue, CloseWakesWaitersAndLetsConsumersDrain) {
  BoundedQueue<int> full(1, "full");
  BoundedQueue<int> empty(1, "empty");
  full.push(7, milliseconds(0));
  std::atomic<int> woken{0};
  std::thread pusher([&] {
    if (full.push(8, std::chrono::seconds(30)) == QueueStatus::kClosed) ++woken;
  });
  std::thread popper([&] {
    int out = 0;
    if (empty.pop(out, std::chrono::seconds(30)) == QueueStatus::kClosed) ++woken;
  });
  std::this_thread::sleep_for(milliseconds(50));
  full.close();
  empty.close();
  pusher.join();
  popper.join();
  EXPECT_EQ(woken.load(), 2);  // kClosed, not the kTimedOut that waiting out 30 s would give
  int out = 0;
  EXPECT_EQ(full.pop(out, milliseconds(0)), QueueStatus::kOk);  // what was queued is still there
  EXPECT_EQ(out, 7);
  EXPECT_EQ(full.pop(out, milliseconds(0)), QueueStatus::kClosed);
  EXPECT_EQ(full.push(9, milliseconds(0)), QueueStatus::kClosed);
}

}  // namespace
}  // namespace concord::core
