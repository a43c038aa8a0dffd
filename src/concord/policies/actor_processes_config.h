#pragma once

#include <cstdint>
#include <string>

#include "concord/core/config_fields.h"

namespace concord::policies {

// How the `actor_processes` policy runs (keys policy.actor_processes.<field>).
struct ActorProcessesConfig {
  // true: actors wait for the parameters of update k before collecting rollout k + 1 (on-policy).
  // false: actors collect rollout k + 1 while the learner trains on rollout k (one update of
  // policy lag, reported as charts/policy_lag), overlapping acting and learning.
  bool synchronous = true;
  // Parameters go to the actors after every this many updates.
  int64_t broadcast_every = 1;
  // "continue": an actor that dies or stops answering is dropped, logged, and the run goes on
  // with the others; "abort": the run fails naming the actor.
  std::string on_actor_failure = "continue";

  // Throws std::invalid_argument listing every bad field with its value.
  void validate() const;
  static const core::ConfigFields<ActorProcessesConfig>& fields();
};

}  // namespace concord::policies
