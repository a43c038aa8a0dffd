#pragma once

#include "concord/algos/learner.h"
#include "concord/algos/off_policy_learner.h"
#include "concord/algos/on_policy_learner.h"

namespace concord::algos {

// `learner` as its family's interface (Learner::family()), or nullptr where it is of the other
// family. For the few places that resolve a learner's family once: the policy registry, which
// then hands each policy's factory the family it drives (policies/policy_context.h), the shared
// runtime that drives either family (policies/runtime/learner_drive.h), and the CLI's off-policy
// extras (replay checkpoints). No dynamic_cast: the family is the learner's own answer.
inline OnPolicyLearner* on_policy(Learner& learner) {
  return learner.family() == Family::kOnPolicy ? static_cast<OnPolicyLearner*>(&learner) : nullptr;
}
inline const OnPolicyLearner* on_policy(const Learner& learner) {
  return learner.family() == Family::kOnPolicy ? static_cast<const OnPolicyLearner*>(&learner) : nullptr;
}
inline OffPolicyLearner* off_policy(Learner& learner) {
  return learner.family() == Family::kOffPolicy ? static_cast<OffPolicyLearner*>(&learner) : nullptr;
}
inline const OffPolicyLearner* off_policy(const Learner& learner) {
  return learner.family() == Family::kOffPolicy ? static_cast<const OffPolicyLearner*>(&learner) : nullptr;
}

}  // namespace concord::algos
