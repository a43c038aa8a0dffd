#pragma once

#include <cstdint>

#include "concord/algos/off_policy_learner.h"
#include "concord/core/episode_stats.h"
#include "concord/policies/apex_config.h"
#include "concord/policies/policy.h"

namespace concord::policies {

// Where the Ape-X learner's env steps come from: actor threads of this process (apex.cpp) or
// actor ranks (apex_processes.cpp). Called on the learner's thread only.
class ApexStepSource {
 public:
  virtual ~ApexStepSource() = default;
  // The env steps in the learner's replay now (the source first observes whatever arrived).
  virtual int64_t take_steps() = 0;
  // Blocks until more than `beyond` steps can be taken, a failure, or should_stop; throws after
  // policy.apex.wait_timeout_seconds without a step.
  virtual void wait_for_steps(int64_t beyond) = 0;
  // Env steps the actors have taken so far, observed or on their way.
  virtual int64_t steps_taken() const = 0;
  // max_env_steps_per_update: the actors may take steps while steps_taken() is below `step`.
  virtual void allow_steps(int64_t step) = 0;
  // Makes the learner's current parameters, after `updates` updates, the actors' next ones.
  virtual void publish(int64_t updates) = 0;
  // An actor (or the source's own thread) failed: the learner stops.
  virtual bool failed() const = 0;
  // After each update: hands the episodes the actors finished to `record_episode`.
  virtual void after_update() {}
};

// The actors' first allowance under max_env_steps_per_update, the one learn_back_to_back starts
// from: max(learning_starts, the state's global_step) + max_env_steps_per_update.
int64_t initial_allowance(const ApexConfig& config, const algos::OffPolicyLearner& learner, const TrainingState& state);

// The learner's side of Ape-X, on the calling thread: from the first step past
// max(learning_starts, the state's global_step) on, learner.update() back to back; the
// parameters published every publish_every updates; every update reported with charts/SPS,
// charts/updates_per_env_step (since the first update of this run), time/update_seconds,
// time/learner_wait_seconds and the actors' exploration metrics (their contexts' averaged). An
// update that finds no batch in the replay (a resume) waits for more steps and lets the actors
// on. Returns at total_steps, when should_stop says so or the source failed.
void learn_back_to_back(const ApexConfig& config, algos::OffPolicyLearner& learner, ApexStepSource& source,
                        TrainingState& state, int64_t total_steps, int64_t checkpoint_interval_steps,
                        const TrainingCallbacks& callbacks, const core::EpisodeStats& episodes, int num_actors);

}  // namespace concord::policies
