#pragma once

#include <condition_variable>
#include <mutex>
#include <utility>

#include "concord/policies/runtime/workers.h"

namespace concord::policies::runtime {

// Lets a checkpoint wait until no thread is in the middle of a unit of work that changes what the
// checkpoint saves (an update on shared parameters, a rollout stepping envs an exploration bonus
// counts), and holds new units off until it is written. Any number of threads may be inside units
// at once; every wait is bounded by the run's timeout and ends on its stop.
//
//   worker:      gate.unit([&] { update(); });
//   checkpoint:  gate.paused([&] { save(); });
//
// (A timed mutex did this once; its try_lock_for goes through pthread_mutex_clocklock, which
// ThreadSanitizer does not intercept, so every checkpoint read as an unlock of an unlocked mutex.)
class CheckpointGate {
 public:
  // `worker` and `work` name the two in errors ("the collector", "a rollout").
  CheckpointGate(Workers& workers, std::string worker, std::string work)
      : workers_(workers), worker_(std::move(worker)), work_(std::move(work)) {
    workers_.on_stop([this] {
      std::lock_guard<std::mutex> lock(mutex_);
      changed_.notify_all();
    });
  }

  // Runs body() as one unit, once no checkpoint holds the gate; returns what it returns.
  template <typename Body>
  auto unit(Body&& body) {
    enter();
    struct Leave {
      CheckpointGate& gate;
      ~Leave() { gate.leave(); }
    } leave{*this};
    return std::forward<Body>(body)();
  }

  // Runs body() once no unit is in progress, with new units held off until it returns.
  template <typename Body>
  void paused(Body&& body) {
    pause();
    struct Resume {
      CheckpointGate& gate;
      ~Resume() { gate.resume(); }
    } resume{*this};
    std::forward<Body>(body)();
  }

 private:
  void enter() {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!changed_.wait_for(lock, workers_.timeout(), [&] { return !paused_ || workers_.stopping(); })) {
      workers_.timed_out(worker_, "a checkpoint to be written");
    }
    if (workers_.stopping()) throw Stopped{};
    ++inside_;
  }
  void leave() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      --inside_;
    }
    changed_.notify_all();
  }
  void pause() {
    std::unique_lock<std::mutex> lock(mutex_);
    paused_ = true;
    if (changed_.wait_for(lock, workers_.timeout(), [&] { return inside_ == 0 || workers_.stopping(); }) &&
        !workers_.stopping()) {
      return;
    }
    paused_ = false;
    lock.unlock();
    changed_.notify_all();
    workers_.timed_out("a checkpoint", work_ + " in progress to end");
  }
  void resume() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      paused_ = false;
    }
    changed_.notify_all();
  }

  Workers& workers_;
  const std::string worker_, work_;
  std::mutex mutex_;
  std::condition_variable changed_;
  int inside_ = 0;
  bool paused_ = false;
};

}  // namespace concord::policies::runtime
