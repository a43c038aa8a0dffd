#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "concord/core/timer.h"
#include "concord/policies/runtime/workers.h"

namespace concord::policies::runtime {

// The learner's parameters as acting threads see them: the last `slots` versions, version v (the
// parameters after v updates) in slot v % slots, each read by exact version. Which parameters act
// then never depends on how fast the threads run, and a run repeats exactly: with a policy lag
// bounded by L updates, L + 1 slots are enough, since the learner is never more than L versions
// past the one a reader needs.
//
//   learner:  publish(v, [&](Snapshot& s) { copy the parameters into s; })
//   actor:    read(v, [&](Snapshot& s) { copy s into its own network; })   waits until v is out
//
// A Snapshot is whatever holds one version: a flat tensor, an ActorCopy. Each slot has its own
// lock, so a reader copying version v never waits for the learner writing v + 1. A reader that
// would wait spins first for `spin_seconds` (0: never) before it sleeps: a wait about one update
// long is cheaper spun than slept, since waking a sleeping thread costs the learner a system call
// per publish (bench/RESULTS.md, "DQN on CartPole"); the learner notifies only a sleeping reader.
template <typename Snapshot>
class ParameterVersions {
 public:
  // Makes `slots` snapshots with make() (a prvalue: snapshots need not move). `reader` names the
  // waiting side in errors ("the collector").
  template <typename Make>
  ParameterVersions(Workers& workers, int64_t slots, Make&& make, std::string reader, double spin_seconds = 0.0)
      : workers_(workers), reader_(std::move(reader)), spin_seconds_(spin_seconds) {
    if (slots < 1) throw std::invalid_argument("ParameterVersions: slots must be >= 1");
    for (int64_t i = 0; i < slots; ++i) slots_.push_back(std::unique_ptr<Slot>(new Slot(make)));
    workers_.on_stop([this] {
      std::lock_guard<std::mutex> lock(mutex_);
      published_.notify_all();
    });
  }

  // The learner: writes version `version` into its slot with write(Snapshot&), then wakes a reader
  // waiting for it. Versions are published in increasing order.
  template <typename Write>
  void publish(int64_t version, Write&& write) {
    {
      Slot& slot = slot_of(version);
      std::lock_guard<std::mutex> lock(slot.mutex);
      std::forward<Write>(write)(slot.snapshot);
      slot.version = version;
    }
    bool wake = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      latest_.store(version);
      wake = sleepers_ > 0;
    }
    if (wake) published_.notify_all();
  }

  // A reader: waits until `version` is published, then runs read(Snapshot&) while no publish can
  // change that slot. Throws Stopped if the run stops first, std::runtime_error if the learner
  // publishes nothing that new within the run's timeout, std::logic_error if the slot already
  // holds a later version (the reader fell more than slots - 1 versions behind).
  template <typename Read>
  void read(int64_t version, Read&& read) {
    wait_for(version);
    Slot& slot = slot_of(version);
    std::lock_guard<std::mutex> lock(slot.mutex);
    if (slot.version != version) {
      throw std::logic_error("policy '" + workers_.policy() + "': parameters of update " + std::to_string(version) +
                             " were overwritten by those of update " + std::to_string(slot.version) + " before " +
                             reader_ + " read them");
    }
    std::forward<Read>(read)(slot.snapshot);
  }

  // A reader that takes whatever is newest, without waiting: runs read(Snapshot&) on the latest
  // version's slot (or a later one published meanwhile) and returns that slot's version.
  template <typename Read>
  int64_t read_newest(Read&& read) {
    Slot& slot = slot_of(std::max<int64_t>(latest_.load(), 0));
    std::lock_guard<std::mutex> lock(slot.mutex);
    std::forward<Read>(read)(slot.snapshot);
    return slot.version;
  }

  // The newest version published (-1: none yet).
  int64_t latest() const { return latest_.load(); }

 private:
  struct Slot {
    template <typename Make>
    explicit Slot(Make& make) : snapshot(make()) {}
    std::mutex mutex;
    Snapshot snapshot;
    int64_t version = -1;
  };

  Slot& slot_of(int64_t version) { return *slots_[static_cast<size_t>(version % static_cast<int64_t>(slots_.size()))]; }

  void wait_for(int64_t version) {
    const auto ready = [&] { return workers_.stopping() || latest_.load() >= version; };
    if (!ready() && spin_seconds_ > 0.0) {
      core::Stopwatch spin;
      while (!ready() && spin.elapsed_seconds() < spin_seconds_) relax();
    }
    if (!ready()) {
      std::unique_lock<std::mutex> lock(mutex_);
      ++sleepers_;
      const bool arrived = published_.wait_for(lock, workers_.timeout(), ready);
      --sleepers_;
      if (!arrived) workers_.timed_out(reader_, "the learner's parameters of update " + std::to_string(version));
    }
    if (workers_.stopping()) throw Stopped{};
  }

  // A pause in a spin loop: lets the other hyperthread of the core run.
  static void relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }

  Workers& workers_;
  const std::string reader_;
  const double spin_seconds_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::atomic<int64_t> latest_{-1};
  std::mutex mutex_;  // sleepers_, and latest_'s changes for a sleeping reader
  std::condition_variable published_;
  int sleepers_ = 0;
};

}  // namespace concord::policies::runtime
