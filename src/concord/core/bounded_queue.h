#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace concord::core {

// What a queue operation came to.
enum class QueueStatus {
  kOk,        // the item was pushed / popped
  kTimedOut,  // the wait ran out: the queue stayed full (push) or empty (pop)
  kClosed,    // the queue was closed (push), or closed and drained (pop)
};

// A FIFO of at most `capacity` items shared by producer and consumer threads, in which every
// blocking wait has a timeout, so that a stuck partner shows up as an error instead of a hang.
//
//   producers: push(item, timeout)  -> blocks while full
//   consumers: pop(out, timeout), pop_batch(out, max_items, timeout) -> block while empty
//   owner:     close()              -> wakes every waiter; pushes fail, pops drain what is left
//
// Thread-safe; all methods may be called from any thread. `name` is for error messages.
template <typename T>
class BoundedQueue {
 public:
  using Duration = std::chrono::steady_clock::duration;

  // Throws std::invalid_argument if capacity is 0.
  BoundedQueue(size_t capacity, std::string name) : capacity_(capacity), name_(std::move(name)) {
    if (capacity_ == 0) throw std::invalid_argument("queue '" + name_ + "': capacity must be >= 1");
  }

  // Appends `item` once there is room; on kTimedOut or kClosed the item is dropped.
  QueueStatus push(T item, Duration timeout) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!not_full_.wait_for(lock, timeout, [&] { return closed_ || items_.size() < capacity_; })) {
      return QueueStatus::kTimedOut;
    }
    if (closed_) return QueueStatus::kClosed;
    items_.push_back(std::move(item));
    lock.unlock();
    not_empty_.notify_one();
    return QueueStatus::kOk;
  }

  // Moves the oldest item into `out`.
  QueueStatus pop(T& out, Duration timeout) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!not_empty_.wait_for(lock, timeout, [&] { return closed_ || !items_.empty(); })) {
      return QueueStatus::kTimedOut;
    }
    if (items_.empty()) return QueueStatus::kClosed;
    out = std::move(items_.front());
    items_.pop_front();
    lock.unlock();
    not_full_.notify_one();
    return QueueStatus::kOk;
  }

  // Waits for at least one item, then appends to `out` whatever is there, up to max_items (>= 1):
  // a batch that never waits for stragglers.
  QueueStatus pop_batch(std::vector<T>& out, size_t max_items, Duration timeout) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!not_empty_.wait_for(lock, timeout, [&] { return closed_ || !items_.empty(); })) {
      return QueueStatus::kTimedOut;
    }
    if (items_.empty()) return QueueStatus::kClosed;
    const size_t taken = std::min(std::max<size_t>(max_items, 1), items_.size());
    for (size_t i = 0; i < taken; ++i) {
      out.push_back(std::move(items_.front()));
      items_.pop_front();
    }
    lock.unlock();
    not_full_.notify_all();
    return QueueStatus::kOk;
  }

  // Refuses further pushes and wakes every waiter. Items already queued can still be popped.
  void close() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      closed_ = true;
    }
    not_full_.notify_all();
    not_empty_.notify_all();
  }

  bool is_closed() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return closed_;
  }
  size_t size() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return items_.size();
  }
  size_t capacity() const { return capacity_; }
  const std::string& name() const { return name_; }

 private:
  const size_t capacity_;
  const std::string name_;
  mutable std::mutex mutex_;
  std::condition_variable not_full_, not_empty_;
  std::deque<T> items_;
  bool closed_ = false;
};

}  // namespace concord::core
