#include "concord/comm/watchdog.h"

#include <utility>

namespace concord::comm {

Watchdog::Watchdog() : thread_([this] { run(); }) {}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

Watchdog::Armed Watchdog::arm(Clock::time_point deadline, std::function<void()> on_expiry) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    armed_ = true;
    fired_ = false;
    deadline_ = deadline;
    on_expiry_ = std::move(on_expiry);
  }
  changed_.notify_all();
  return Armed(*this);
}

bool Watchdog::disarm() {
  std::lock_guard<std::mutex> lock(mutex_);
  armed_ = false;
  on_expiry_ = nullptr;
  const bool fired = fired_;
  fired_ = false;
  return fired;
}

void Watchdog::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    if (!armed_) {
      changed_.wait(lock, [this] { return armed_ || stopping_; });
      continue;
    }
    const Clock::time_point deadline = deadline_;
    // Wakes for a new deadline, a disarm or the stop; otherwise fires at the deadline.
    if (changed_.wait_until(lock, deadline, [&] { return !armed_ || stopping_ || deadline_ != deadline; })) continue;
    armed_ = false;
    fired_ = true;
    if (on_expiry_) on_expiry_();
    on_expiry_ = nullptr;
  }
}

}  // namespace concord::comm
