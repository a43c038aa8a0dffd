#pragma once

#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <string>

namespace concord::core {

// Which threads of a pool created up front may work: threads 0 .. active() - 1. The others park
// in wait_until_active() until they are activated again, so the pool can grow and shrink while
// running without creating or destroying threads (GA3C's dynamic adjustment).
//
//   worker i:  while (gate.wait_until_active(i)) { one unit of work }
//   owner:     gate.set_active(n) ... gate.close()
//
// A thread checks the gate only between units of work, so a deactivated thread finishes what it
// holds first. Thread-safe.
class ActiveThreads {
 public:
  // Throws std::invalid_argument unless 1 <= active <= size.
  ActiveThreads(int size, int active, std::string name) : size_(size), name_(std::move(name)) { set_active(active); }

  // Throws std::invalid_argument unless 1 <= active <= size.
  void set_active(int active) {
    if (active < 1 || active > size_) {
      throw std::invalid_argument(name_ + ": active threads must be in [1, " + std::to_string(size_) + "], got " +
                                  std::to_string(active));
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      active_ = active;
    }
    changed_.notify_all();
  }

  int active() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return active_;
  }
  int size() const { return size_; }

  // Parks thread `index` while it is inactive. Returns true when it may work; false once the
  // gate is closed and it is inactive (it should exit). Active threads keep getting true after
  // close(), so they can drain their queues; they watch the queues to know when to stop.
  bool wait_until_active(int index) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return closed_ || index < active_; });
    return index < active_;
  }

  // Releases every parked thread for good (each returns false from wait_until_active).
  void close() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      closed_ = true;
    }
    changed_.notify_all();
  }

 private:
  const int size_;
  const std::string name_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  int active_ = 0;
  bool closed_ = false;
};

}  // namespace concord::core
