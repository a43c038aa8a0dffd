#include "concord/envs/worker_pool.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace concord::envs {
namespace {

int64_t now_nanoseconds() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

WorkerPool::WorkerPool(int num_threads) {
  if (num_threads < 1) {
    throw std::invalid_argument("WorkerPool needs num_threads >= 1, got " + std::to_string(num_threads));
  }
  ranges_ = std::make_unique<Range[]>(static_cast<size_t>(num_threads));
  item_bounds_.resize(static_cast<size_t>(num_threads) + 1);
  task_bounds_.resize(static_cast<size_t>(num_threads) + 1);
  helpers_.reserve(static_cast<size_t>(num_threads - 1));
  for (int home = 1; home < num_threads; ++home) helpers_.emplace_back([this, home] { helper_loop(home); });
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_.store(true);
  }
  work_cv_.notify_all();
  for (auto& helper : helpers_) helper.join();
}

void WorkerPool::submit(int64_t num_tasks, TaskFn task, void* context, const int64_t* home) {
  if (job_outstanding_) throw std::logic_error("WorkerPool::submit: a job is already outstanding");
  if (num_tasks < 0 || num_tasks > kMaxTasks) {
    throw std::invalid_argument("WorkerPool::submit: task count " + std::to_string(num_tasks) + " out of range [0, " +
                                std::to_string(kMaxTasks) + "]");
  }
  task_ = task;
  context_ = context;
  num_tasks_ = num_tasks;
  error_ = nullptr;
  done_.store(0, std::memory_order_relaxed);
  job_outstanding_ = true;
  const uint64_t generation = generation_.load(std::memory_order_relaxed) + 1;
  const auto threads = static_cast<int64_t>(num_threads());
  for (int64_t t = 0; t < threads; ++t) {
    const auto begin = static_cast<uint64_t>(home ? home[t] : t * num_tasks / threads);
    const auto end = static_cast<uint64_t>(home ? home[t + 1] : (t + 1) * num_tasks / threads);
    ranges_[t].word.store(((generation & 0xFFFF) << (2 * kCountBits)) | (begin << kCountBits) | end,
                          std::memory_order_release);
  }
  generation_.store(generation);
  // Pairs with the helper's increment of sleeping_helpers_ before it re-reads generation_ (both
  // sequentially consistent): either it sees the new job or we see it asleep and wake it.
  if (sleeping_helpers_.load() > 0) {
    { std::lock_guard<std::mutex> lock(mutex_); }
    work_cv_.notify_all();
  }
}

void WorkerPool::wait() {
  if (!job_outstanding_) return;
  run_available_tasks(0);
  auto all_done = [&] { return done_.load() == num_tasks_; };
  if (!spin_until(all_done, kSpinNanoseconds)) {
    std::unique_lock<std::mutex> lock(mutex_);
    owner_sleeping_.store(true);
    done_cv_.wait(lock, all_done);
    owner_sleeping_.store(false);
  }
  job_outstanding_ = false;
  if (error_) {
    std::exception_ptr error = error_;
    error_ = nullptr;
    std::rethrow_exception(error);
  }
}

void WorkerPool::run_available_tasks(int home) {
  const int threads = num_threads();
  for (int i = 0; i < threads; ++i) {
    const int victim = home + i < threads ? home + i : home + i - threads;
    std::atomic<uint64_t>& word = ranges_[victim].word;
    uint64_t value = word.load(std::memory_order_acquire);
    while (next_of(value) < end_of(value)) {
      if (word.compare_exchange_weak(value, value + (uint64_t{1} << kCountBits), std::memory_order_acq_rel,
                                     std::memory_order_acquire)) {
        run_task(static_cast<int64_t>(next_of(value)));
        value = word.load(std::memory_order_acquire);
      }
    }
  }
}

void WorkerPool::run_task(int64_t index) {
  try {
    task_(context_, index);
  } catch (...) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!error_) error_ = std::current_exception();
  }
  // The last task wakes the owner if it went to sleep (same pairing as in submit()). num_tasks_
  // is still this job's: the owner cannot start another before this increment.
  const int64_t count = num_tasks_;
  if (done_.fetch_add(1) + 1 == count && owner_sleeping_.load()) {
    { std::lock_guard<std::mutex> lock(mutex_); }
    done_cv_.notify_one();
  }
}

void WorkerPool::helper_loop(int home) {
  uint64_t seen = 0;
  while (!stop_.load(std::memory_order_relaxed)) {
    wait_for_work(seen);
    seen = generation_.load(std::memory_order_acquire);
    run_available_tasks(home);
  }
}

void WorkerPool::wait_for_work(uint64_t seen) {
  auto woken = [&] { return stop_.load() || generation_.load() != seen; };
  if (spin_until(woken, kSpinNanoseconds)) return;
  std::unique_lock<std::mutex> lock(mutex_);
  sleeping_helpers_.fetch_add(1);
  work_cv_.wait(lock, woken);
  sleeping_helpers_.fetch_sub(1);
}

IndexQueue::IndexQueue(int64_t capacity) : ring_(static_cast<size_t>(std::max<int64_t>(capacity, 1))) {}

void IndexQueue::push(const int32_t* ids, int64_t count) {
  if (count <= 0) return;
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto capacity = static_cast<int64_t>(ring_.size());
    const int64_t size = size_.load(std::memory_order_relaxed);
    if (size + count > capacity) {
      throw std::logic_error("IndexQueue::push: " + std::to_string(count) + " ids do not fit (" + std::to_string(size) +
                             " of " + std::to_string(capacity) + " slots in use)");
    }
    int64_t tail = (head_ + size) % capacity;
    for (int64_t i = 0; i < count; ++i) {
      ring_[static_cast<size_t>(tail)] = ids[i];
      if (++tail == capacity) tail = 0;
    }
    if (size == 0) waiting_since_ns_.store(now_nanoseconds(), std::memory_order_relaxed);
    size_.store(size + count, std::memory_order_release);
    wake = waiting_ > 0 && size + count >= wake_at_;
  }
  if (wake) cv_.notify_all();
}

int64_t IndexQueue::pop(int32_t* out, int64_t max_count, int64_t min_count) {
  min_count = std::max<int64_t>(min_count, 1);
  auto ready = [&] {
    return size_.load(std::memory_order_acquire) >= min_count || closed_flag_.load(std::memory_order_acquire);
  };
  spin_until(ready, WorkerPool::kSpinNanoseconds);
  std::unique_lock<std::mutex> lock(mutex_);
  while (!closed_ && size_.load(std::memory_order_relaxed) < min_count) {
    // push() wakes the waiters only once the smallest minimum among them is met.
    wake_at_ = waiting_ == 0 ? min_count : std::min(wake_at_, min_count);
    ++waiting_;
    cv_.wait(lock);
    --waiting_;
  }
  if (closed_) return 0;
  return pop_locked(out, max_count);
}

int64_t IndexQueue::try_pop(int32_t* out, int64_t max_count) {
  if (size_.load(std::memory_order_acquire) == 0) return 0;
  std::lock_guard<std::mutex> lock(mutex_);
  if (closed_) return 0;
  return pop_locked(out, max_count);
}

int64_t IndexQueue::pop_locked(int32_t* out, int64_t max_count) {
  const auto capacity = static_cast<int64_t>(ring_.size());
  const int64_t size = size_.load(std::memory_order_relaxed);
  const int64_t take = std::min(max_count, size);
  for (int64_t i = 0; i < take; ++i) {
    out[i] = ring_[static_cast<size_t>(head_)];
    if (++head_ == capacity) head_ = 0;
  }
  size_.store(size - take, std::memory_order_release);
  waiting_since_ns_.store(now_nanoseconds(), std::memory_order_relaxed);
  return take;
}

std::chrono::nanoseconds IndexQueue::stalled_for() const {
  if (size_.load(std::memory_order_relaxed) == 0) return std::chrono::nanoseconds(0);
  return std::chrono::nanoseconds(now_nanoseconds() - waiting_since_ns_.load(std::memory_order_relaxed));
}

void IndexQueue::close() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closed_ = true;
    closed_flag_.store(true, std::memory_order_release);
  }
  cv_.notify_all();
}

}  // namespace concord::envs
