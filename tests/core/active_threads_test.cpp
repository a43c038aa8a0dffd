#include "concord/core/active_threads.h"

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

#include <gtest/gtest.h>

namespace concord::core {
namespace {

using std::chrono::milliseconds;

TEST(ActiveThreads, ParksInactiveThreadsUntilActivatedOrClosed) {
  ActiveThreads gate(3, 1, "workers");
  EXPECT_TRUE(gate.wait_until_active(0));
  std::atomic<int> result{-1};
  std::thread parked([&] { result = gate.wait_until_active(2) ? 1 : 0; });
  std::this_thread::sleep_for(milliseconds(30));
  EXPECT_EQ(result.load(), -1);
  gate.set_active(3);
  parked.join();
  EXPECT_EQ(result.load(), 1);

  gate.set_active(1);
  std::thread released([&] { result = gate.wait_until_active(1) ? 1 : 0; });
  gate.close();
  released.join();
  EXPECT_EQ(result.load(), 0);
  EXPECT_TRUE(gate.wait_until_active(0));  // active threads keep working to drain their queues
  EXPECT_THROW(gate.set_active(0), std::invalid_argument);
}

}  // namespace
}  // namespace concord::core
