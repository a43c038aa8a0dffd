#include "concord/policies/apex_config.h"

#include <cmath>
#include <string>

#include "concord/core/config_problems.h"

namespace concord::policies {

void ApexConfig::validate() const {
  core::ConfigProblems problems;
  problems.check(actors >= 1, "actors", actors, ">= 1");
  problems.check(publish_every >= 1, "publish_every", publish_every, ">= 1");
  problems.check(refresh_every >= 1, "refresh_every", refresh_every, ">= 1");
  problems.check(max_env_steps_per_update >= 0, "max_env_steps_per_update", max_env_steps_per_update,
                 ">= 0 (0 = unbounded)");
  problems.check(min_env_steps_per_update >= 0, "min_env_steps_per_update", min_env_steps_per_update,
                 ">= 0 (0 = back to back)");
  if (max_env_steps_per_update > 0 && min_env_steps_per_update > max_env_steps_per_update) {
    problems.add("min_env_steps_per_update=" + std::to_string(min_env_steps_per_update) +
                 " exceeds max_env_steps_per_update=" + std::to_string(max_env_steps_per_update) +
                 ": the learner would wait for steps the actors may not take");
  }
  problems.check(epsilon >= 0.0 && epsilon <= 1.0, "epsilon", epsilon, "in [0, 1]");
  problems.check(alpha >= 0.0, "alpha", alpha, ">= 0");
  problems.check(wait_timeout_seconds > 0.0, "wait_timeout_seconds", wait_timeout_seconds, "> 0");
  if (on_actor_failure != "continue" && on_actor_failure != "abort") {
    problems.add("on_actor_failure must be \"continue\" or \"abort\", got \"" + on_actor_failure + "\"");
  }
  problems.throw_if_any("policy.apex config");
}

const core::ConfigFields<ApexConfig>& ApexConfig::fields() {
  using C = ApexConfig;
  static const core::ConfigFields<C> kFields = {
      {"actors", &C::actors,
       "Actor threads, each stepping its own envs (env.num_envs is split among them); under a launcher, the actor "
       "ranks after the learner (rank 0), one actor each"},
      {"publish_every", &C::publish_every, "Learner updates between publications of its parameters to the actors"},
      {"refresh_every", &C::refresh_every,
       "Env steps of an actor (over its envs) between picking up the latest published parameters (Ape-X: 400); "
       "across processes, also the steps of each segment of transitions an actor sends"},
      {"max_env_steps_per_update", &C::max_env_steps_per_update,
       "Actors wait while the env steps since the first update exceed this many per update (0: never wait; the "
       "replay ratio is then set by the relative speeds of acting and learning)"},
      {"min_env_steps_per_update", &C::min_env_steps_per_update,
       "The learner waits for this many new env steps per update (0: updates back to back; with "
       "max_env_steps_per_update equal, the replay ratio is pinned from both sides)"},
      {"wait_timeout_seconds", &C::wait_timeout_seconds,
       "A wait between the actors and the learner longer than this is an error naming it"},
      {"epsilon", &C::epsilon, "Ape-X's exploration: actor i of A > 1 acts with epsilon^(1 + alpha i / (A - 1))"},
      {"alpha", &C::alpha, "Ape-X's exploration: the exponent's spread over the actors"},
      {"on_actor_failure", &C::on_actor_failure,
       "Across processes: continue (drop an actor rank that dies or stalls and train on with the others) or abort "
       "(the run fails naming it)"},
  };
  return kFields;
}

double ApexConfig::actor_epsilon(int actor, int count) const {
  if (count <= 1) return -1.0;
  return std::pow(epsilon, 1.0 + alpha * static_cast<double>(actor) / static_cast<double>(count - 1));
}

std::vector<double> ApexConfig::actor_epsilons(int count) const {
  std::vector<double> epsilons;
  for (int a = 0; a < count; ++a) epsilons.push_back(actor_epsilon(a, count));
  return epsilons;
}

}  // namespace concord::policies
