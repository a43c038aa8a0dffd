#include "concord/policies/on_policy_update.h"

#include <algorithm>

#include "concord/policies/exploration_bonus.h"

namespace concord::policies {

algos::Metrics run_on_policy_update(algos::OnPolicyLearner& learner, const algos::Rollout& collected,
                                    explore::Bonus* bonus, TrainingState& state, int64_t total_steps) {
  algos::Metrics bonus_metrics;
  const algos::Rollout rollout = bonus != nullptr ? with_bonus(*bonus, collected, bonus_metrics) : collected;
  const double progress = std::min(1.0, static_cast<double>(state.global_step) / static_cast<double>(total_steps));
  algos::Metrics metrics = learner.update(rollout, progress);
  ++state.updates;
  check_finite(metrics, state);
  metrics.insert(bonus_metrics.begin(), bonus_metrics.end());
  return metrics;
}

}  // namespace concord::policies
