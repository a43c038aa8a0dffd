#pragma once

// The threads and the queue under the vector engine.
//
//   parallel_for(n, chunk, fn):  [0, n) -> chunks -> one contiguous home range of chunks per
//                                thread (caller = thread 0) -> a thread done with its own range
//                                steals unclaimed chunks from the others'
//   submit(tasks, fn) / wait():  the same, without the caller, for long-running helper loops
//   IndexQueue:                  env ids waiting to be stepped (the async mode's work queue)
//
// Home ranges keep each env on the same thread from batch to batch (its state stays in that
// core's cache) as long as every thread keeps up; stealing means the caller never waits for a
// helper that is asleep or descheduled, only for chunks a helper has already started. Idle
// helpers spin briefly and then block on a condition variable.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace concord::envs {

// A fixed pool of `num_threads` threads, counting the calling thread: it owns num_threads - 1
// helpers for its whole life.
//
// Contract: one job at a time, started and waited for by one thread (the owner); helpers never
// call back into the pool. The destructor joins the helpers; it must not run while a job is
// outstanding (wait() first).
class WorkerPool {
 public:
  // A task of a job: called as fn(context, task_index).
  using TaskFn = void (*)(void* context, int64_t task_index);

  // Throws std::invalid_argument when num_threads < 1.
  explicit WorkerPool(int num_threads);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  int num_threads() const { return static_cast<int>(helpers_.size()) + 1; }

  // Runs fn(begin, end) over [0, n) on the caller and the helpers and returns when all is done.
  // [0, n) is cut into num_threads contiguous home ranges (boundaries on multiples of 16 items
  // when n allows, so per-item byte and float buffers split on cache lines), and each range
  // into chunks of at most `chunk_size` items. Thread t (the caller is 0) runs its own range
  // first, so the same items land on the same thread on every call whatever the chunk size.
  // With chunk_size >= n, or one thread, fn(0, n) runs inline without waking anyone. If fn
  // throws, the other chunks still run and the first exception is rethrown here.
  template <typename Fn>
  void parallel_for(int64_t n, int64_t chunk_size, Fn&& fn);

  // Starts task(context, i) for i in [0, num_tasks) and returns at once. Thread t (the caller is
  // 0) owns tasks [home[t], home[t + 1]) when `home` (num_threads + 1 ascending bounds from 0 to
  // num_tasks) is given, else [t * num_tasks / T, (t + 1) * num_tasks / T): with num_tasks =
  // T - 1 each helper owns one task and the caller none. Throws std::logic_error if a job is
  // outstanding.
  void submit(int64_t num_tasks, TaskFn task, void* context, const int64_t* home = nullptr);
  // Runs the tasks of the outstanding job that no helper has claimed yet on the calling thread,
  // waits for the rest, and rethrows the first exception a task threw. No-op without a job.
  void wait();

  // How long an idle thread polls before it blocks.
  static constexpr int64_t kSpinNanoseconds = 50'000;
  // The most tasks one job may have.
  static constexpr int64_t kMaxTasks = (int64_t{1} << 24) - 1;

 private:
  // One thread's home range of the current job, on its own cache line. The word packs
  // {generation:16 | next task:24 | end task:24}; a task is claimed by a CAS that advances
  // `next`. A CAS only succeeds on the current word, so a claim always takes a task of the
  // current job, and the job's descriptor is read after the claim.
  struct alignas(64) Range {
    std::atomic<uint64_t> word{0};
  };
  static constexpr int kCountBits = 24;
  static constexpr uint64_t kCountMask = (uint64_t{1} << kCountBits) - 1;
  static uint64_t next_of(uint64_t word) { return (word >> kCountBits) & kCountMask; }
  static uint64_t end_of(uint64_t word) { return word & kCountMask; }

  // Claims and runs tasks, from thread `home`'s range first and then from the others', until
  // no task of the current job is left unclaimed.
  void run_available_tasks(int home);
  void run_task(int64_t index);
  void helper_loop(int home);
  // Waits until generation_ differs from `seen` or the pool stops.
  void wait_for_work(uint64_t seen);

  std::vector<std::thread> helpers_;
  std::unique_ptr<Range[]> ranges_;  // [num_threads]
  // parallel_for's partition, reused across calls: item and task bounds of each home range.
  std::vector<int64_t> item_bounds_;  // [num_threads + 1]
  std::vector<int64_t> task_bounds_;  // [num_threads + 1]

  // Bumped by every submit(); helpers wait for it to change.
  alignas(64) std::atomic<uint64_t> generation_{0};
  // The current job; written by the owner before the range words publish it, read after a claim.
  TaskFn task_ = nullptr;
  void* context_ = nullptr;
  int64_t num_tasks_ = 0;
  bool job_outstanding_ = false;

  alignas(64) std::atomic<int64_t> done_{0};

  alignas(64) std::mutex mutex_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  std::atomic<int> sleeping_helpers_{0};
  std::atomic<bool> owner_sleeping_{false};
  std::atomic<bool> stop_{false};
  std::exception_ptr error_;
};

// A bounded FIFO of env indices: the owner pushes the ids it sends, worker threads pop them in
// chunks (one lock per chunk, so locking cost is amortised over the chunk's env steps).
// Thread-safe. close() wakes every blocked pop(), which then returns 0.
class IndexQueue {
 public:
  // `capacity` ids may wait at once.
  explicit IndexQueue(int64_t capacity);

  // Appends ids[0..count). Throws std::logic_error when they do not fit.
  void push(const int32_t* ids, int64_t count);
  // Blocks until at least min_count ids wait (after a short spin) or the queue is closed; moves
  // up to max_count (>= 1) of them into out and returns how many. Returns 0 once closed, even if
  // ids are still waiting. A min_count above 1 leaves small remainders to try_pop() callers.
  int64_t pop(int32_t* out, int64_t max_count, int64_t min_count = 1);
  // Like pop() but returns 0 at once when nothing is waiting.
  int64_t try_pop(int32_t* out, int64_t max_count);
  void close();
  int64_t size() const { return size_.load(std::memory_order_relaxed); }
  // How long ids have been waiting with nobody popping any: the time since the later of the last
  // pop and the moment the queue stopped being empty; 0 when empty. Lets a thief spot a queue
  // whose consumer is asleep or descheduled.
  std::chrono::nanoseconds stalled_for() const;

 private:
  int64_t pop_locked(int32_t* out, int64_t max_count);

  std::vector<int32_t> ring_;
  int64_t head_ = 0;
  std::mutex mutex_;
  std::condition_variable cv_;
  int waiting_ = 0;
  int64_t wake_at_ = 1;  // The smallest min_count among the waiting pops.
  bool closed_ = false;
  // Mirrors the count under the lock, so that consumers can poll without taking it.
  alignas(64) std::atomic<int64_t> size_{0};
  std::atomic<bool> closed_flag_{false};
  std::atomic<int64_t> waiting_since_ns_{0};  // steady_clock time, see stalled_for().
};

// Busy-waits politely for one iteration (the CPU's pause hint).
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#else
  std::this_thread::yield();
#endif
}

// Polls `ready` for up to `nanoseconds`: with the pause hint at first, then yielding the CPU
// between polls (on a busy machine the thread we wait for may need this core). True once ready.
template <typename Ready>
bool spin_until(Ready&& ready, int64_t nanoseconds) {
  const auto start = std::chrono::steady_clock::now();
  const auto budget = std::chrono::nanoseconds(nanoseconds);
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (ready()) return true;
      cpu_relax();
    }
    const auto elapsed = std::chrono::steady_clock::now() - start;
    if (elapsed >= budget) return ready();
    if (elapsed >= budget / 8) std::this_thread::yield();
  }
}

template <typename Fn>
void WorkerPool::parallel_for(int64_t n, int64_t chunk_size, Fn&& fn) {
  if (n <= 0) return;
  if (chunk_size < 1) chunk_size = 1;
  const int threads = num_threads();
  if (threads == 1 || chunk_size >= n) {
    fn(int64_t{0}, n);
    return;
  }
  // Keep the chunk count within a claim word.
  if (n / chunk_size + threads > kMaxTasks) chunk_size = n / (kMaxTasks - threads) + 1;
  const int64_t align = n >= 16 * threads ? 16 : 1;
  item_bounds_[0] = 0;
  task_bounds_[0] = 0;
  for (int t = 1; t <= threads; ++t) {
    const int64_t bound = t == threads ? n : (t * n / threads + align / 2) / align * align;
    item_bounds_[t] = bound < item_bounds_[t - 1] ? item_bounds_[t - 1] : (bound > n ? n : bound);
    task_bounds_[t] = task_bounds_[t - 1] + (item_bounds_[t] - item_bounds_[t - 1] + chunk_size - 1) / chunk_size;
  }
  struct Loop {
    std::remove_reference_t<Fn>* fn;
    const int64_t* item_bounds;
    const int64_t* task_bounds;
    int64_t chunk_size;
  } loop{&fn, item_bounds_.data(), task_bounds_.data(), chunk_size};
  submit(
      task_bounds_[threads],
      [](void* context, int64_t task) {
        auto* l = static_cast<Loop*>(context);
        int t = 0;
        while (task >= l->task_bounds[t + 1]) ++t;
        const int64_t begin = l->item_bounds[t] + (task - l->task_bounds[t]) * l->chunk_size;
        const int64_t end =
            begin + l->chunk_size < l->item_bounds[t + 1] ? begin + l->chunk_size : l->item_bounds[t + 1];
        (*l->fn)(begin, end);
      },
      &loop, task_bounds_.data());
  wait();
}

}  // namespace concord::envs
