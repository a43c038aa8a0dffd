#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "concord/policies/runtime/channel.h"
#include "concord/policies/runtime/slots.h"
#include "concord/policies/runtime/workers.h"

namespace concord::policies::runtime {

// Finished units of experience on their way from producer threads to the consumers that learn
// from them, and the slots that bound how many are collected and not yet learned from: the
// bound on the policy lag at its source. The learner is usually the slowest stage, so whatever
// producers collect ahead of it only waits here and grows older; a producer therefore takes a
// slot before it starts a unit, and the slot frees once a consumer has learned from the unit.
//
//   producer p:  while (queue.take_slot(p, name)) { collect a unit; queue.push(p, unit); }
//   consumer:    queue.consume(ready, [&](std::vector<T>& batch) { learn from batch; });
//
// Per producer (`per_producer`): each producer has its own `slots` and queue, and each batch is
// the next unit of every producer, in producer order, gathered by one consumer at a time, so that
// what a batch holds depends on the seed and the lag, never on which producer ran ahead.
// Otherwise all producers share one pool of `slots`, and a batch is the first `batch_size` units
// to arrive (the last batch may be short).
template <typename T>
class TrainingQueue {
 public:
  TrainingQueue(Workers& workers, int producers, bool per_producer, int64_t slots, size_t batch_size,
                const std::string& producer_noun, const std::string& consumer)
      : workers_(workers), per_producer_(per_producer), batch_size_(batch_size) {
    for (int i = 0; i < (per_producer ? producers : 1); ++i) {
      const std::string whose = per_producer ? " of " + producer_noun + " " + std::to_string(i) : "";
      queues_.push_back(&workers.make<Channel<Unit>>("training queue" + whose, static_cast<size_t>(slots),
                                                     "the " + producer_noun + "s", consumer));
      slots_.push_back(&workers.make<Slots>("training slots" + whose, slots));
    }
  }

  // Takes one of the producer's slots; false once the slots are closed.
  bool take_slot(int producer, const std::string& waiter) { return slots_[index(producer)]->take(waiter); }
  void push(int producer, T unit) { queues_[index(producer)]->push(Unit{producer, std::move(unit)}); }

  // Producers waiting for a slot, and all that ask later, learn that the run is over.
  void close_slots() {
    for (Slots* slots : slots_) slots->close();
  }
  // No more units: consumers learn from what is queued, then return.
  void close() {
    for (Channel<Unit>* queue : queues_) queue->close();
  }
  size_t size() const {
    size_t queued = 0;
    for (const Channel<Unit>* queue : queues_) queued += queue->size();
    return queued;
  }

  // One consumer thread's loop: learn(batch) for every batch it gathers, then the batch's slots
  // free, until the queue is closed and drained or the run stops. `ready()` is asked before each
  // new batch (a parked spare consumer waits in it); false ends the consumer.
  void consume(const std::function<bool()>& ready, const std::function<void(std::vector<T>&)>& learn) {
    per_producer_ ? consume_rounds(learn) : consume_pooled(ready, learn);
  }

 private:
  struct Unit {
    int producer = 0;
    T value;
  };

  size_t index(int producer) const { return per_producer_ ? static_cast<size_t>(producer) : 0; }

  void consume_pooled(const std::function<bool()>& ready, const std::function<void(std::vector<T>&)>& learn) {
    std::vector<Unit> batch;
    while (batch.empty() ? ready() : true) {
      if (workers_.stopping()) return;
      Unit unit;
      const Popped popped = queues_.front()->try_pop(unit);
      if (popped == Popped::kIdle) continue;  // an idle spare consumer is fine
      if (popped == Popped::kItem) {
        batch.push_back(std::move(unit));
        if (batch.size() < batch_size_) continue;
      }
      if (!batch.empty()) learn_and_free(batch, learn);
      if (popped == Popped::kClosed) return;
    }
  }

  // Consumers take turns gathering a round and learning from it, so that rounds are learned in
  // the order they were gathered.
  void consume_rounds(const std::function<void(std::vector<T>&)>& learn) {
    while (!workers_.stopping()) {
      std::vector<Unit> batch;
      bool closed = false;
      std::lock_guard<std::mutex> round(round_mutex_);
      for (Channel<Unit>* queue : queues_) {
        Unit unit;
        Popped popped;
        while ((popped = queue->try_pop(unit)) == Popped::kIdle) {
          if (workers_.stopping()) return;  // the producer's own waits time out
        }
        if (popped == Popped::kItem) batch.push_back(std::move(unit));
        closed = closed || popped == Popped::kClosed;
      }
      // Once every producer has exited the queues are closed: the rounds then drain what is left.
      if (batch.empty() && closed) return;
      if (!batch.empty()) learn_and_free(batch, learn);
    }
  }

  void learn_and_free(std::vector<Unit>& batch, const std::function<void(std::vector<T>&)>& learn) {
    std::vector<T> values;
    values.reserve(batch.size());
    for (Unit& unit : batch) values.push_back(std::move(unit.value));
    learn(values);
    for (const Unit& unit : batch) slots_[index(unit.producer)]->give();
    batch.clear();
  }

  Workers& workers_;
  const bool per_producer_;
  const size_t batch_size_;
  std::mutex round_mutex_;  // per producer: one consumer at a time gathers a round and learns it
  std::vector<Channel<Unit>*> queues_;
  std::vector<Slots*> slots_;
};

}  // namespace concord::policies::runtime
