#include "concord/policies/policy.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

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

UpdateReporter::UpdateReporter(const TrainingState& start, int64_t checkpoint_interval_steps)
    : checkpoint_interval_steps_(checkpoint_interval_steps),
      next_checkpoint_step_((start.global_step / checkpoint_interval_steps + 1) * checkpoint_interval_steps),
      steps_at_start_(start.global_step) {}

double UpdateReporter::steps_per_second(int64_t global_step) const {
  return static_cast<double>(global_step - steps_at_start_) / std::max(clock_.elapsed_seconds(), 1e-9);
}

void UpdateReporter::report(const TrainingState& state, algos::Metrics& metrics, const core::EpisodeStats& episodes,
                            const TrainingCallbacks& callbacks) {
  metrics.emplace("charts/SPS", steps_per_second(state.global_step));
  if (auto recent = episodes.recent_mean_return()) metrics["charts/episodic_return"] = *recent;
  if (auto recent = episodes.recent_mean_length()) metrics["charts/episodic_length"] = *recent;
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
