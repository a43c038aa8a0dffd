#include "concord/policies/async_learner_config.h"

#include "concord/core/config_problems.h"

namespace concord::policies {

void AsyncLearnerConfig::validate() const {
  core::ConfigProblems problems;
  problems.check(max_policy_lag >= 0, "max_policy_lag", max_policy_lag, ">= 0");
  problems.check(wait_timeout_seconds > 0.0, "wait_timeout_seconds", wait_timeout_seconds, "> 0");
  problems.throw_if_any("policy.async_learner config");
}

const core::ConfigFields<AsyncLearnerConfig>& AsyncLearnerConfig::fields() {
  using C = AsyncLearnerConfig;
  static const core::ConfigFields<C> kFields = {
      {"max_policy_lag", &C::max_policy_lag,
       "Updates a rollout's acting parameters may be behind the learner (1: collect the next rollout while learning "
       "from this one; 0: take turns, on-policy)"},
      {"wait_timeout_seconds", &C::wait_timeout_seconds,
       "A wait between the collector and the learner longer than this is an error naming it"},
  };
  return kFields;
}

}  // namespace concord::policies
