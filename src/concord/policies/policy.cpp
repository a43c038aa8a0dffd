#include "concord/policies/policy.h"
#include "concord/policies/runtime/metric_names.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

#include <c10/core/GradMode.h>

namespace concord::policies {

void check_finite(const algos::Metrics& metrics, const TrainingState& state) {
  for (const auto& [name, value] : metrics) {
    if (!std::isfinite(value)) {
      throw NonFiniteMetric(name + " became " + std::to_string(value) + " at update " + std::to_string(state.updates) +
                            " (step " + std::to_string(state.global_step) +
                            "); training stopped, the last checkpoint is intact");
    }
  }
}

void record_episode(core::EpisodeStats& episodes, const TrainingCallbacks& callbacks, double episode_return,
                    int64_t episode_length) {
  episodes.add(episode_return, episode_length);
  if (callbacks.on_episode) callbacks.on_episode(episode_return, episode_length);
}

int64_t off_policy_updates_due(int64_t before, int64_t after, int64_t learning_starts, int64_t train_frequency) {
  const int64_t first = std::max(before, learning_starts) / train_frequency + 1;
  const int64_t last = after / train_frequency;
  return std::max<int64_t>(0, last - first + 1);
}

algos::Metrics run_off_policy_updates(algos::OffPolicyLearner& learner, TrainingState& state, int64_t due,
                                      int64_t total_steps, const std::function<void()>& after_each) {
  const double progress = std::min(1.0, static_cast<double>(state.global_step) / static_cast<double>(total_steps));
  algos::Metrics metrics;
  for (int64_t update = 0; update < due; ++update) {
    algos::Metrics step_metrics = learner.update(state.global_step, progress);
    if (after_each) after_each();
    if (step_metrics.empty()) continue;  // the replay does not hold a batch yet
    ++state.updates;
    metrics = std::move(step_metrics);
  }
  if (metrics.empty()) return metrics;
  check_finite(metrics, state);
  const algos::Metrics exploration = learner.actor().exploration({false, state.global_step, total_steps, 0, 1});
  metrics.insert(exploration.begin(), exploration.end());
  return metrics;
}

UpdateReporter::UpdateReporter(const TrainingState& start, int64_t checkpoint_interval_steps)
    : checkpoint_interval_steps_(checkpoint_interval_steps),
      next_checkpoint_step_((start.global_step / checkpoint_interval_steps + 1) * checkpoint_interval_steps),
      steps_at_start_(start.global_step) {}

double UpdateReporter::steps_per_second(int64_t global_step) const {
  return static_cast<double>(global_step - steps_at_start_) / std::max(clock_.elapsed_seconds(), 1e-9);
}

void UpdateReporter::report(const TrainingState& state, algos::Metrics& metrics, const core::EpisodeStats& episodes,
                            const TrainingCallbacks& callbacks) {
  metrics.emplace(runtime::metric::kStepsPerSecond, steps_per_second(state.global_step));
  if (auto recent = episodes.recent_mean_return()) metrics[runtime::metric::kEpisodicReturn] = *recent;
  if (auto recent = episodes.recent_mean_length()) metrics[runtime::metric::kEpisodicLength] = *recent;
  // Bookkeeping never needs gradients, and with them an in-place copy from the parameters made
  // its destination part of the graph: the CLI's snapshot of the parameters chained one node per
  // update, about 400 bytes each, until a long DQN run overflowed the stack freeing them.
  c10::NoGradGuard no_grad;
  if (callbacks.on_update) callbacks.on_update(state, metrics, episodes);
  if (checkpoint_due(state.global_step, callbacks) && callbacks.on_checkpoint) callbacks.on_checkpoint(state);
}

bool UpdateReporter::checkpoint_due(int64_t global_step, const TrainingCallbacks& callbacks) {
  // Both are asked every time: a step-due checkpoint also satisfies a pending time request.
  const bool requested = callbacks.checkpoint_requested && callbacks.checkpoint_requested();
  if (global_step < next_checkpoint_step_) return requested;
  next_checkpoint_step_ += checkpoint_interval_steps_;
  return true;
}

}  // namespace concord::policies
