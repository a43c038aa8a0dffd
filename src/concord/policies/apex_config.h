#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "concord/core/config_fields.h"
#include "concord/policies/runtime/replay_pacing.h"

namespace concord::policies {

// policy.apex.*
struct ApexConfig {
  int actors = 2;  // actor threads (under a launcher: actor ranks); env.num_envs is split among them
  // Learner updates between two publications of its parameters to the actors. Ape-X's actors act
  // with parameters about 50 updates old (a refresh every 400 frames, ~2.8 s, at ~19 updates/s);
  // 50 keeps them as fresh as that while a publication (one flat copy, under a lock the actors
  // take to refresh) costs a fiftieth of a copy per update, whatever the network's size.
  int64_t publish_every = 50;
  // Env steps of one actor (summed over its envs) between picking up the latest published
  // parameters: Ape-X's 400 frames. Across processes, also the steps of each segment an actor
  // sends (rounded up to whole steps of its envs).
  int64_t refresh_every = 400;
  // 0: actors never wait for the learner (Ape-X), and the replay ratio is whatever the relative
  // speeds of acting and learning make it. N > 0: from learning_starts on, the actors start a step
  // only while global_step is below an allowance that grows by N with every update, so that fast
  // actors cannot dilute the replay ratio below one update per N env steps (plus one step of each
  // actor in flight). An update that finds no batch in the replay lets the actors N steps on.
  int64_t max_env_steps_per_update = 0;
  // 0: the learner updates back to back (Ape-X). N > 0: the learner's u-th update of a run waits
  // until global_step has passed max(learning_starts, the run's first step) + (u - 1) x N, so that a
  // learner faster than its actors cannot raise the replay ratio above one update per N env steps
  // (with max_env_steps_per_update = N too, the ratio is pinned from both sides, as Acme's rate
  // limiter pins samples per insert). At most max_env_steps_per_update when that is set.
  int64_t min_env_steps_per_update = 0;
  double wait_timeout_seconds = 60.0;  // a blocking wait longer than this is an error naming it
  // Across processes: "continue" drops an actor rank that dies or stalls, logs it, and trains on
  // with the others (Ape-X's actors are many and interchangeable); "abort" fails the run naming
  // it. An actor thread's failure always fails the run (it shares the learner's process).
  std::string on_actor_failure = "continue";
  // Ape-X's exploration: actor i of A > 1 acts epsilon-greedily with epsilon^(1 + alpha i / (A - 1)),
  // from epsilon (actor 0) down to epsilon^(1 + alpha) (the last), whatever the step; one actor
  // follows the algorithm's own schedule. Algorithms without an epsilon ignore it.
  double epsilon = 0.4;
  double alpha = 7.0;

  // The epsilon of actor i of `count` (ActingContext::epsilon): -1, the algorithm's schedule, for
  // a single actor.
  double actor_epsilon(int actor, int count) const;
  // Every actor's, in order.
  std::vector<double> actor_epsilons(int count) const;
  // The learner's pacing against its actors, as these keys set it.
  runtime::ReplayPacing pacing() const {
    return {publish_every, max_env_steps_per_update, min_env_steps_per_update, wait_timeout_seconds};
  }

  // Throws std::invalid_argument listing every bad field with its value.
  void validate() const;
  static const core::ConfigFields<ApexConfig>& fields();
};

}  // namespace concord::policies
