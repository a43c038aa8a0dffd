#pragma once
// A guard for tests whose point is that something ends: a hang would otherwise hold the suite
// until ctest's timeout and report nothing useful. It is not a timing assertion: the limit is far
// above any healthy duration, so a loaded machine cannot trip it.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <future>
#include <thread>

#include <gtest/gtest.h>

namespace concord::test {

// Runs `body` on its own thread. If it has not returned within `limit`, the test fails with
// `what`, and the process exits: a hung thread cannot be stopped from outside.
inline void ends_within(std::chrono::seconds limit, const char* what, const std::function<void()>& body) {
  std::packaged_task<void()> task(body);
  std::future<void> done = task.get_future();
  std::thread runner(std::move(task));
  if (done.wait_for(limit) != std::future_status::ready) {
    std::fprintf(stderr, "hang guard: %s did not end within %lld s\n", what, static_cast<long long>(limit.count()));
    std::fflush(stderr);
    ADD_FAILURE() << what << " did not end within " << limit.count() << " s";
    std::_Exit(1);
  }
  runner.join();
  done.get();  // rethrows what the body threw
}

}  // namespace concord::test
