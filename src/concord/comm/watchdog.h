#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace concord::comm {

// A thread that calls a function at a deadline unless it is disarmed first. With
// Request::abort() it bounds a wait by less than the communicator's timeout, which a backend
// cannot do itself without failing the whole rank (Gloo closes every connection on a timeout):
//
//   comm::Watchdog watchdog;
//   {
//     const comm::Watchdog::Armed armed = watchdog.arm(deadline, [&] { request->abort(); });
//     request->wait();  // CommAborted once the deadline passes
//   }                   // disarmed: the function is not running and will not run
//
// One deadline at a time; the thread lives as long as the Watchdog, so arming costs no thread.
class Watchdog {
 public:
  using Clock = std::chrono::steady_clock;

  Watchdog();
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Disarms its Watchdog when it goes out of scope (also on an exception).
  class Armed {
   public:
    explicit Armed(Watchdog& watchdog) : watchdog_(&watchdog) {}
    Armed(Armed&& other) noexcept : watchdog_(other.watchdog_) { other.watchdog_ = nullptr; }
    Armed(const Armed&) = delete;
    Armed& operator=(const Armed&) = delete;
    Armed& operator=(Armed&&) = delete;
    ~Armed() {
      if (watchdog_ != nullptr) watchdog_->disarm();
    }

   private:
    Watchdog* watchdog_;
  };

  // Calls `on_expiry` on the watchdog's thread at `deadline` unless disarmed first; replaces
  // an earlier deadline. `on_expiry` must be quick (it runs under the watchdog's lock).
  [[nodiscard]] Armed arm(Clock::time_point deadline, std::function<void()> on_expiry);
  // Cancels the deadline. When it returns, `on_expiry` is not running and will not run. Returns
  // whether it had run.
  bool disarm();

 private:
  void run();

  std::mutex mutex_;
  std::condition_variable changed_;
  bool armed_ = false;
  bool fired_ = false;
  bool stopping_ = false;
  Clock::time_point deadline_;
  std::function<void()> on_expiry_;
  std::thread thread_;  // last: started once the members above exist
};

}  // namespace concord::comm
