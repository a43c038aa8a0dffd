#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "concord/core/bounded_queue.h"
#include "concord/policies/runtime/workers.h"

namespace concord::policies::runtime {

// What a spare thread's pop came to: an item, an idle wait (no error for a spare), or the end.
enum class Popped { kItem, kIdle, kClosed };

// A bounded queue between the threads of one run, carrying the run's timeout and stop: a wait
// that runs out is an error naming the policy, the waiter and the channel (Workers::timed_out);
// a wait the stop cuts short throws Stopped; closing says "no more items", and the consumer
// drains what is queued.
//
//   producer:  channel.push(item)              blocks while full
//   consumer:  if (!channel.pop(item)) break   false once closed and drained
//
// `producer` and `consumer` name the two sides in errors ("the collector", "the learner").
template <typename T>
class Channel {
 public:
  Channel(Workers& workers, std::string name, size_t capacity, std::string producer, std::string consumer)
      : workers_(workers),
        queue_(capacity, std::move(name)),
        producer_(std::move(producer)),
        consumer_(std::move(consumer)) {
    workers_.on_stop([this] { queue_.close(); });
  }

  // Appends `item` once there is room. Throws Stopped if the channel is closed (the run is
  // stopping or the consumer left), std::runtime_error if it stayed full for the timeout.
  void push(T item) {
    switch (queue_.push(std::move(item), workers_.timeout())) {
      case core::QueueStatus::kOk:
        return;
      case core::QueueStatus::kClosed:
        throw Stopped{};
      case core::QueueStatus::kTimedOut:
        workers_.timed_out(producer_, consumer_ + " to take from the " + queue_.name());
    }
  }

  // Moves the oldest item into `out`; false once the channel is closed and drained. Throws
  // std::runtime_error if nothing came for the timeout (Stopped if the run is stopping).
  bool pop(T& out) {
    switch (queue_.pop(out, workers_.timeout())) {
      case core::QueueStatus::kOk:
        return true;
      case core::QueueStatus::kClosed:
        return false;
      case core::QueueStatus::kTimedOut:
        break;
    }
    workers_.timed_out(consumer_, producer_ + " to fill the " + queue_.name());
  }

  // pop() for a spare thread, whose idle wait is no error.
  Popped try_pop(T& out) { return popped(queue_.pop(out, workers_.timeout())); }

  // Waits for one item, then takes whatever is queued, up to max_items, onto `out`.
  Popped try_pop_batch(std::vector<T>& out, size_t max_items) {
    return popped(queue_.pop_batch(out, max_items, workers_.timeout()));
  }

  // No more items: pushes throw Stopped, pops drain what is queued, then return false.
  void close() { queue_.close(); }
  size_t size() const { return queue_.size(); }
  const std::string& name() const { return queue_.name(); }

 private:
  static Popped popped(core::QueueStatus status) {
    switch (status) {
      case core::QueueStatus::kOk:
        return Popped::kItem;
      case core::QueueStatus::kTimedOut:
        return Popped::kIdle;
      case core::QueueStatus::kClosed:
        break;
    }
    return Popped::kClosed;
  }

  Workers& workers_;
  core::BoundedQueue<T> queue_;
  const std::string producer_, consumer_;
};

}  // namespace concord::policies::runtime
