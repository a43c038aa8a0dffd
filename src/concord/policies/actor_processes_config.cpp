#include "concord/policies/actor_processes_config.h"

#include "concord/core/config_problems.h"

namespace concord::policies {

void ActorProcessesConfig::validate() const {
  core::ConfigProblems problems;
  // Worded as they were before ConfigProblems collected them, since tests and users match them.
  if (broadcast_every < 1) problems.add("broadcast_every must be >= 1, got " + std::to_string(broadcast_every));
  if (on_actor_failure != "continue" && on_actor_failure != "abort") {
    problems.add("on_actor_failure must be \"continue\" or \"abort\", got \"" + on_actor_failure + "\"");
  }
  problems.throw_if_any("policy.actor_processes config");
}

const core::ConfigFields<ActorProcessesConfig>& ActorProcessesConfig::fields() {
  static const core::ConfigFields<ActorProcessesConfig> kFields = {
      {"synchronous", &ActorProcessesConfig::synchronous,
       "true: actors wait for each update's parameters; false: they collect the next rollout meanwhile"},
      {"broadcast_every", &ActorProcessesConfig::broadcast_every, "Updates between parameter broadcasts to the actors"},
      {"on_actor_failure", &ActorProcessesConfig::on_actor_failure, "continue (drop a dead actor and go on) or abort"},
  };
  return kFields;
}

}  // namespace concord::policies
