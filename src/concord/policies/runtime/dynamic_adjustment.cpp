#include "concord/policies/runtime/dynamic_adjustment.h"

#include <algorithm>
#include <stdexcept>

#include <spdlog/spdlog.h>

#include "concord/core/timer.h"
#include "concord/policies/runtime/metric_names.h"

namespace concord::policies::runtime {

std::string ThreadCounts::to_string() const {
  return std::to_string(agents) + " agents, " + std::to_string(predictors) + " predictors, " +
         std::to_string(trainers) + " trainers";
}

DynamicAdjustment::DynamicAdjustment(ThreadCounts maximum, ThreadCounts start, uint64_t seed)
    : maximum_(maximum), current_(start), baseline_(start), rng_(seed) {
  const auto in_range = [](int count, int most) { return count >= 1 && count <= most; };
  if (!in_range(start.agents, maximum.agents) || !in_range(start.predictors, maximum.predictors) ||
      !in_range(start.trainers, maximum.trainers)) {
    throw std::invalid_argument("dynamic adjustment: start (" + start.to_string() + ") must lie in [1, maximum (" +
                                maximum.to_string() + ")]");
  }
}

int DynamicAdjustment::step(int count, int maximum) {
  const int delta = static_cast<int>(core::uniform_index(rng_, 3)) - 1;
  return std::clamp(count + delta, 1, maximum);
}

ThreadCounts DynamicAdjustment::next(double tps) {
  if (measuring_trial_) {
    ++decisions_;
    if (tps > baseline_tps_) {
      ++kept_;
      spdlog::info("central_inference: keeping {} ({:.1f} trainings/s, was {:.1f} with {})", current_.to_string(), tps,
                   baseline_tps_, baseline_.to_string());
      baseline_ = current_;
      baseline_tps_ = tps;
    } else {
      spdlog::info("central_inference: reverting {} ({:.1f} trainings/s) to {} ({:.1f})", current_.to_string(), tps,
                   baseline_.to_string(), baseline_tps_);
      current_ = baseline_;
      measuring_trial_ = false;  // measure the reverted counts afresh before the next move
      return current_;
    }
  } else {
    baseline_ = current_;
    baseline_tps_ = tps;
  }
  current_ = ThreadCounts{step(baseline_.agents, maximum_.agents), step(baseline_.predictors, maximum_.predictors),
                          step(baseline_.trainers, maximum_.trainers)};
  measuring_trial_ = true;
  return current_;
}

AdjustedThreads::AdjustedThreads(ThreadCounts configured, bool adjust, double interval_seconds, uint64_t seed)
    : agents(configured.agents, configured.agents, "agents"),
      predictors(configured.predictors, configured.predictors, "predictors"),
      trainers(configured.trainers, configured.trainers, "trainers"),
      interval_(core::steady_duration(interval_seconds)),
      interval_start_(std::chrono::steady_clock::now()) {
  if (adjust) adjustment_ = std::make_unique<DynamicAdjustment>(configured, configured, seed);
}

void AdjustedThreads::poll(int64_t updates_done) {
  const auto now = std::chrono::steady_clock::now();
  if (!adjustment_ || now - interval_start_ < interval_) return;
  const double seconds = std::chrono::duration<double>(now - interval_start_).count();
  const ThreadCounts next = adjustment_->next(static_cast<double>(updates_done - updates_at_interval_start_) / seconds);
  agents.set_active(next.agents);
  predictors.set_active(next.predictors);
  trainers.set_active(next.trainers);
  decisions_ = adjustment_->decisions();
  interval_start_ = now;
  updates_at_interval_start_ = updates_done;
}

void AdjustedThreads::close() {
  agents.close();
  predictors.close();
  trainers.close();
}

void AdjustedThreads::add_metrics(algos::Metrics& metrics) const {
  metrics[metric::kActiveAgents] = agents.active();
  metrics[metric::kActivePredictors] = predictors.active();
  metrics[metric::kActiveTrainers] = trainers.active();
  if (adjustment_) metrics[metric::kAdjustments] = static_cast<double>(decisions_.load());
}

}  // namespace concord::policies::runtime
