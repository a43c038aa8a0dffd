#pragma once

#include <cstdint>
#include <string>

#include "concord/algos/on_policy_learner.h"
#include "concord/algos/rollout.h"
#include "concord/explore/bonus.h"
#include "concord/policies/policy.h"

namespace concord::policies::runtime {

// One update of an on-policy learner on `collected`, whose env steps state.global_step already
// counts: the exploration bonus (if not null) added to its rewards, learner.update(rollout,
// progress = global_step / total_steps), state.updates counting it. Returns the update's metrics,
// checked (check_finite), with the bonus's. The update step of every on-policy loop, as
// run_off_policy_updates is of the off-policy ones.
algos::Metrics run_on_policy_update(algos::OnPolicyLearner& learner, const algos::Rollout& collected,
                                    explore::Bonus* bonus, TrainingState& state, int64_t total_steps);

// Refuses, in one line naming `policy`'s setting, a max_policy_lag > 0 that `learner` does not
// correct (PPO's clipped ratio and A2C's V-trace do): `what` says what the lag is of ("acts with
// parameters", "trains segments").
void require_lag_correction(const std::string& policy, int64_t max_policy_lag, const algos::OnPolicyLearner& learner,
                            const std::string& what);

}  // namespace concord::policies::runtime
