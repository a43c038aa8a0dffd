#include "concord/policies/runtime/on_policy_update.h"

#include <algorithm>
#include <stdexcept>

#include "concord/policies/runtime/exploration_bonus.h"

namespace concord::policies::runtime {

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

void require_lag_correction(const std::string& policy, int64_t max_policy_lag, const algos::OnPolicyLearner& learner,
                            const std::string& what) {
  if (max_policy_lag <= 0 || learner.corrects_policy_lag()) return;  // a negative lag is the config's to refuse
  throw std::invalid_argument("policy '" + policy + "' " + what +
                              " up to max_policy_lag = " + std::to_string(max_policy_lag) +
                              " updates old, which this algorithm does not correct (A2C: set algo.a2c.vtrace = true; "
                              "or set policy." +
                              policy + ".max_policy_lag = 0)");
}

}  // namespace concord::policies::runtime
