#pragma once

#include <cstdint>
#include <string>

#include "concord/core/rng.h"

namespace concord::policies {

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

}  // namespace concord::policies
