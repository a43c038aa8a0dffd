#pragma once

#include "concord/algos/learner.h"
#include "concord/algos/on_policy_learner.h"
#include "concord/algos/rollout.h"
#include "concord/explore/bonus.h"

namespace concord::policies::runtime {

// Where a distribution policy applies the Bonus fragment: to each rollout it collected, before
// the learner sees it. Every state s_t of the rollout is counted (the whole batch first, as in
// Tang et al.'s Algorithm 1), and the learner's reward for step t becomes r_t + bonus(s_t).
//
// Returns a rollout sharing every tensor with `rollout` except rewards, and adds to `metrics`
// charts/bonus_mean (mean bonus per step) and charts/env_reward_mean (mean environment reward per
// step). Episode returns (charts/episodic_return, evaluation) are never touched: they stay the
// environment's own. Thread-safe when the bonus is (every explore:: bonus is).
algos::Rollout with_bonus(explore::Bonus& bonus, const algos::Rollout& rollout, algos::Metrics& metrics);

// A bonus applies to rollouts only: throws std::invalid_argument, in one line, for a bonus (not
// null) with a learner that is not on-policy. For the constructors of policies that run both.
void refuse_bonus_off_policy(const explore::Bonus* bonus, const algos::Learner& learner);

}  // namespace concord::policies::runtime
