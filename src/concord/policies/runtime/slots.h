#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <utility>

#include "concord/policies/runtime/workers.h"

namespace concord::policies::runtime {

// A fixed number of slots that producers take before they start a unit of experience and that
// the consumer gives back once it has learned from it: a bound on how far collection runs ahead
// of learning, so on the policy lag (central_inference's segments in flight). Every wait is
// bounded by the run's timeout and ends on its stop; closing wakes every waiter for good.
class Slots {
 public:
  // `name` names the slots in errors ("training slots").
  Slots(Workers& workers, std::string name, int64_t count) : workers_(workers), name_(std::move(name)), free_(count) {
    workers_.on_stop([this] { close(); });
  }

  // Takes a slot; false once closed. Throws TimedOut naming `waiter` if none frees up in time.
  bool take(const std::string& waiter) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!changed_.wait_for(lock, workers_.timeout(), [&] { return closed_ || free_ > 0; })) {
      lock.unlock();
      workers_.timed_out(waiter, "the " + name_ + " to free up");
    }
    if (closed_) return false;
    --free_;
    return true;
  }

  void give() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++free_;
    }
    changed_.notify_one();
  }

  // Every take() returns false from now on: the run is over for the producers.
  void close() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      closed_ = true;
    }
    changed_.notify_all();
  }

 private:
  Workers& workers_;
  const std::string name_;
  std::mutex mutex_;
  std::condition_variable changed_;
  int64_t free_;
  bool closed_ = false;
};

}  // namespace concord::policies::runtime
