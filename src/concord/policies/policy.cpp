#include "concord/policies/policy.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace concord::policies {

void check_finite(const algos::Metrics& metrics, const TrainingState& state) {
  for (const auto& [name, value] : metrics) {
    if (!std::isfinite(value)) {
      throw std::runtime_error(name + " became " + std::to_string(value) + " at update " +
                               std::to_string(state.updates) + " (step " + std::to_string(state.global_step) +
                               "); training stopped, the last checkpoint is intact");
    }
  }
}

void report_update(const TrainingState& state, algos::Metrics& metrics, const core::EpisodeStats& episodes,
                   const TrainingCallbacks& callbacks, int64_t checkpoint_interval_steps,
                   int64_t& next_checkpoint_step) {
  if (auto recent = episodes.recent_mean_return()) metrics["charts/episodic_return"] = *recent;
  if (auto recent = episodes.recent_mean_length()) metrics["charts/episodic_length"] = *recent;
  if (callbacks.on_update) callbacks.on_update(state, metrics, episodes);
  if (state.global_step >= next_checkpoint_step) {
    if (callbacks.on_checkpoint) callbacks.on_checkpoint(state);
    next_checkpoint_step += checkpoint_interval_steps;
  }
}

}  // namespace concord::policies
