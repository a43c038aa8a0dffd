#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "concord/algos/actor.h"
#include "concord/core/active_threads.h"
#include "concord/core/rng.h"

namespace concord::policies::runtime {

// How many agents, predictors and trainers run.
struct ThreadCounts {
  int agents = 1;
  int predictors = 1;
  int trainers = 1;

  bool operator==(const ThreadCounts& other) const {
    return agents == other.agents && predictors == other.predictors && trainers == other.trainers;
  }
  std::string to_string() const;
};

// GA3C's dynamic adjustment as a pure decision procedure: a random walk over the three thread
// counts that keeps a move only if trainings per second (TPS) rose.
//
//   every interval:  counts = adjustment.next(tps measured during the interval just ended)
//
//   measuring a baseline:  remember its TPS, then try a move (each count -1, 0 or +1 at random,
//                          within [1, maximum])
//   measuring a trial:     TPS above the baseline's: keep it (its TPS is the new baseline) and try
//                          the next move; otherwise revert and measure the reverted counts afresh
//
// A fresh baseline after every revert keeps one lucky, noisy measurement from blocking every
// later move. Each keep or revert is logged with spdlog. Not thread-safe.
class DynamicAdjustment {
 public:
  // Starts measuring `start` as the baseline. Throws std::invalid_argument unless
  // 1 <= start <= maximum for every count.
  DynamicAdjustment(ThreadCounts maximum, ThreadCounts start, uint64_t seed);

  // The counts to run the next interval with, given the TPS of the interval just ended.
  ThreadCounts next(double tps);

  const ThreadCounts& current() const { return current_; }
  // Keep-or-revert decisions made so far.
  int64_t decisions() const { return decisions_; }
  // Of those, moves kept.
  int64_t kept() const { return kept_; }

 private:
  int step(int count, int maximum);

  ThreadCounts maximum_;
  ThreadCounts current_;
  ThreadCounts baseline_;
  double baseline_tps_ = 0.0;
  bool measuring_trial_ = false;
  int64_t decisions_ = 0;
  int64_t kept_ = 0;
  core::Rng rng_;
};

// GA3C's three pools of threads, created up front, with how many of each may work: all of them,
// or, with adjustment on, what DynamicAdjustment chooses every interval from the updates done.
//
//   agent a:      while (threads.agents.wait_until_active(a)) { ... }
//   supervisor:   threads.poll(updates_done)   often; moves the counts once an interval has passed
class AdjustedThreads {
 public:
  AdjustedThreads(ThreadCounts configured, bool adjust, double interval_seconds, uint64_t seed);

  void poll(int64_t updates_done);
  // Wakes every parked thread for good: the run is over.
  void close();
  // charts/active_agents, _predictors and _trainers, and charts/adjustments if adjusting.
  void add_metrics(algos::Metrics& metrics) const;

  core::ActiveThreads agents, predictors, trainers;

 private:
  std::unique_ptr<DynamicAdjustment> adjustment_;  // null: the counts stay as configured
  const std::chrono::steady_clock::duration interval_;
  std::chrono::steady_clock::time_point interval_start_;
  int64_t updates_at_interval_start_ = 0;
  std::atomic<int64_t> decisions_{0};
};

}  // namespace concord::policies::runtime
