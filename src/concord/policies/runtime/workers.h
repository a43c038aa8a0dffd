#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <ATen/core/Generator.h>

#include "concord/core/first_failure.h"

namespace concord::policies::runtime {

// What a wait of the run's parts throws when it runs out (Workers::timed_out): its message names
// the policy, the waiter and what it waited for, so it reaches the caller as thrown.
struct TimedOut : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Thrown by a wait that ends because the run is stopping: the thread that waited just exits.
// Workers' threads end quietly on it; nothing else should catch it.
struct Stopped {};

// The threads of one train() call, started, failed, stopped and joined one way for every policy.
//
//   Workers workers("apex", config.wait_timeout_seconds, "policy.apex.wait_timeout_seconds");
//   auto& steps = workers.make<Channel<Step>>(...);    // parts the threads share; close on stop
//   workers.start("actor 0 of 2", seed, [&] { ... });  // a torch_thread with its own generator
//   ... the calling thread's part ...
//   workers.stop_and_join();                            // or join(): wait for them to end alone
//
// The parts made here (channels, parameter versions, gates) live until every thread is joined,
// whichever way the run ends; anything else a thread or a wake-up touches must be declared before
// the Workers, so that it outlives them.
//
// A thread that throws stops the run: every wake-up registered with on_stop() runs (channels
// close, condition variables are notified), every wait returns or throws Stopped. After the join,
// the first failure is rethrown on the calling thread, as "policy 'P': <thread> failed: <what>"
// (a std::runtime_error). Two pass as thrown: a TimedOut, which names its waiter already, and a
// NonFiniteMetric, which names the update and on whose type the run's owner keys (the learner's
// state is not worth saving). If the calling
// thread's part throws, the destructor stops and joins the threads; its exception leaves.
//
// Every thread runs with its own random generator (core::torch_thread), so that what it draws
// never depends on how the scheduler interleaves the threads. The run's one timeout is here too:
// every wait of its channels and gates is bounded by it and reports itself through timed_out().
class Workers {
 public:
  using Duration = std::chrono::steady_clock::duration;

  // `policy` names the run in errors; `timeout_key` is the setting that raises the timeout.
  Workers(std::string policy, double timeout_seconds, std::string timeout_key);
  ~Workers();
  Workers(const Workers&) = delete;
  Workers& operator=(const Workers&) = delete;

  // Starts thread `name` with a generator seeded `seed` (core::thread_seed(run seed, i) for the
  // run's i-th thread), or continuing `generator`. A thread whose errors name themselves (a
  // communication thread's name the rank that failed) may have an empty name: its errors then
  // read "policy 'P': <what>".
  void start(std::string name, uint64_t seed, std::function<void()> body);
  void start(std::string name, at::Generator generator, std::function<void()> body);

  // Runs `wake` once when the run stops (from whichever thread stops it): closing a channel,
  // notifying a condition variable under its mutex. Register before starting threads.
  void on_stop(std::function<void()> wake);

  // Asks every thread to end: stopping() turns true and the wake-ups run. Idempotent.
  void stop();
  bool stopping() const { return stopping_.load(std::memory_order_relaxed); }

  // Records an error of the calling thread's part (kept unless an earlier one is) and stops.
  void fail(std::exception_ptr error);
  bool failed() const { return failure_.failed(); }

  // Waits up to `slice` for every thread to end; true once they all have. For a calling thread
  // that supervises the run (polls should_stop, adjusts thread counts) while the threads work.
  bool wait_for_end(Duration slice);

  // Waits for every thread to end, then rethrows the first failure, if any.
  void join();
  void stop_and_join() {
    stop();
    join();
  }

  // The calling thread's part of the run: runs here(), then stops and joins the threads and
  // rethrows the first failure. An error of here() is that failure unless a thread failed first
  // (as thrown: the calling thread's errors are the learner's); Stopped from here() is no error.
  void run(const std::function<void()>& here);

  // What a wait that ran out does: throws Stopped if the run is stopping (the wait ran out
  // because its partner left), else TimedOut, in one line:
  //   policy 'P': <waiter> waited <s> s for <what> (raise <key> if the machine is just slow)
  [[noreturn]] void timed_out(const std::string& waiter, const std::string& what) const;

  // Makes a part the threads share, Part(*this, args...), owned here: it outlives every thread.
  template <typename Part, typename... Args>
  Part& make(Args&&... args) {
    auto part = std::make_shared<Part>(*this, std::forward<Args>(args)...);
    Part& made = *part;
    parts_.push_back(std::move(part));
    return made;
  }

  Duration timeout() const { return timeout_; }
  double timeout_seconds() const { return timeout_seconds_; }
  const std::string& policy() const { return policy_; }

 private:
  void launch(std::thread thread);
  std::function<void()> guarded(std::string name, std::function<void()> body);

  const std::string policy_;
  const double timeout_seconds_;
  const Duration timeout_;
  const std::string timeout_key_;
  std::vector<std::shared_ptr<void>> parts_;  // destroyed after the threads are joined
  std::vector<std::thread> threads_;
  std::mutex running_mutex_;  // running_
  std::condition_variable ended_;
  int running_ = 0;
  std::mutex wake_mutex_;  // wakes_ and their one run
  std::vector<std::function<void()>> wakes_;
  bool woken_ = false;
  std::atomic<bool> stopping_{false};
  core::FirstFailure failure_;
};

}  // namespace concord::policies::runtime
