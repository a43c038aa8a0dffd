#pragma once

// The threads and the queue under the vector engine.
//
//   parallel_for(n, chunk, fn):  [0, n) -> chunks -> claimed by the caller and T-1 helpers
//   submit(tasks, fn) / wait():  the same, without the caller, for long-running helper loops
//   IndexQueue:                  env ids waiting to be stepped (the async mode's work queue)
//
// Tasks are claimed from one atomic word, so the caller never waits for a helper that is asleep
// or descheduled: whatever no helper has claimed, the caller runs itself. Idle helpers spin
// briefly and then block on a condition variable.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
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

  // Runs fn(begin, end) over [0, n) in contiguous chunks of `chunk_size` items (the last may be
  // shorter) on the caller and the helpers, and returns when every chunk is done. A single chunk
  // runs inline without waking anyone. If fn throws, the other chunks still run and the first
  // exception is rethrown here.
  template <typename Fn>
  void parallel_for(int64_t n, int64_t chunk_size, Fn&& fn);

  // Starts task(context, i) for i in [0, num_tasks) and returns at once; helpers claim the
  // tasks. Throws std::logic_error if a job is already outstanding.
  void submit(int64_t num_tasks, TaskFn task, void* context);
  // Runs the tasks of the outstanding job that no helper has claimed yet on the calling thread,
  // waits for the rest, and rethrows the first exception a task threw. No-op without a job.
  void wait();

  // How long an idle thread polls before it blocks.
  static constexpr int64_t kSpinNanoseconds = 50'000;

 private:
  // state_ packs {generation:16 | next task:24 | task count:24}; a task is claimed by a CAS
  // that advances `next`, so a stale thread can never claim a task from a newer job.
  static constexpr int kCountBits = 24;
  static constexpr uint64_t kCountMask = (uint64_t{1} << kCountBits) - 1;
  static uint64_t next_of(uint64_t state) { return (state >> kCountBits) & kCountMask; }
  static uint64_t count_of(uint64_t state) { return state & kCountMask; }

  // Claims and runs tasks of the current job until none is left unclaimed.
  void run_available_tasks();
  void run_task(int64_t index, int64_t count);
  void helper_loop();
  // Waits until state_ differs from `seen` or the pool stops.
  void wait_for_work(uint64_t seen);

  std::vector<std::thread> helpers_;

  alignas(64) std::atomic<uint64_t> state_{0};
  // The current job; written by the owner before state_ publishes it, read after a claim.
  TaskFn task_ = nullptr;
  void* context_ = nullptr;
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
  // `capacity` ids may wait at once; a pop takes ceil(size / num_consumers) ids, capped at the
  // caller's maximum, so that the waiting work is spread over the consumers.
  IndexQueue(int64_t capacity, int num_consumers);

  // Appends ids[0..count). Throws std::logic_error when they do not fit.
  void push(const int32_t* ids, int64_t count);
  // Blocks until ids are available (after a short spin) or the queue is closed; moves up to
  // max_count (>= 1) of them into out and returns how many. Returns 0 once closed, even if ids
  // are still waiting.
  int64_t pop(int32_t* out, int64_t max_count);
  // Like pop() but returns 0 at once when nothing is waiting.
  int64_t try_pop(int32_t* out, int64_t max_count);
  void close();
  int64_t size() const { return size_.load(std::memory_order_relaxed); }

 private:
  int64_t pop_locked(int32_t* out, int64_t max_count);

  std::vector<int32_t> ring_;
  int64_t head_ = 0;
  int num_consumers_;
  std::mutex mutex_;
  std::condition_variable cv_;
  int waiting_ = 0;
  bool closed_ = false;
  // Mirrors the count under the lock, so that consumers can poll without taking it.
  alignas(64) std::atomic<int64_t> size_{0};
  std::atomic<bool> closed_flag_{false};
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
  // Keep the chunk count within the claim word.
  const int64_t max_chunks = static_cast<int64_t>(kCountMask);
  if ((n + chunk_size - 1) / chunk_size > max_chunks) chunk_size = (n + max_chunks - 1) / max_chunks;
  const int64_t num_chunks = (n + chunk_size - 1) / chunk_size;
  if (num_chunks == 1 || helpers_.empty()) {
    fn(int64_t{0}, n);
    return;
  }
  struct Loop {
    std::remove_reference_t<Fn>* fn;
    int64_t n;
    int64_t chunk_size;
  } loop{&fn, n, chunk_size};
  submit(
      num_chunks,
      [](void* context, int64_t chunk) {
        auto* l = static_cast<Loop*>(context);
        const int64_t begin = chunk * l->chunk_size;
        const int64_t end = begin + l->chunk_size < l->n ? begin + l->chunk_size : l->n;
        (*l->fn)(begin, end);
      },
      &loop);
  wait();
}

}  // namespace concord::envs
