#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <torch/types.h>

#include "concord/algos/off_policy_learner.h"
#include "concord/core/episode_stats.h"
#include "concord/envs/vector_env.h"
#include "concord/policies/apex_config.h"
#include "concord/policies/policy.h"
#include "concord/policies/runtime/parameter_versions.h"
#include "concord/policies/runtime/workers.h"

namespace concord::policies {

// How one actor thread of a replay feed chooses its actions: with a network copy of its own
// (apex) or through predictors that batch every actor's observations (central_inference). Owned
// by its thread; not thread-safe.
class ActingSeat {
 public:
  virtual ~ActingSeat() = default;
  // The Actor for the next step of `steps` env steps (a copy may first pick up newer parameters).
  virtual algos::Actor& next_actor(int64_t steps) = 0;
  // What travels with a step this seat acted to observe(): Ape-X's priority inputs
  // (ActorReplica::priority_inputs). None by default.
  virtual algos::TensorMap priority_inputs(const algos::TensorMap& /*step*/) { return {}; }
};

// The published parameters the seats act from: the newest flat copy of the learner's.
using PublishedParameters = runtime::ParameterVersions<at::Tensor>;

// What differs between the policies that feed a replay from actor threads.
struct ReplayFeedPlan {
  std::string policy;      // names the run in errors: "apex"
  std::string actor_noun;  // names a thread: "actor" ("actor 0 of 2"), "agent" ("agent 0")
  // publish_every, max_ and min_env_steps_per_update, wait_timeout_seconds (the other fields unused).
  ApexConfig pace;
  std::string pace_key;              // the setting an actor waiting for the learner is told to raise
  bool distinct_exploration = true;  // actor i of A explores as the Actor's i of A (Ape-X), else as 0 of 1
  // Called once per run before any actor starts: one seat per actor, made on `workers` (which may
  // also start threads of the seats' own, such as predictors).
  std::function<std::vector<std::unique_ptr<ActingSeat>>(runtime::Workers& workers, PublishedParameters& parameters)>
      seats;
};

// Actor threads fill the learner's replay while the calling thread learns from it (Ape-X's
// topology, on threads of one process): actor i steps envs[i] and observes its transitions as
// stream i; the learner runs learn_back_to_back. Returns at total_steps, at should_stop, or
// rethrows the first failure of any thread, naming it, after joining every thread.
//
//   actor i (envs[i], seat i):                   learner (the calling thread):
//     claim its envs' steps (total_steps, no more)   wait until global_step > learning_starts
//     wait while past the learner's allowance         repeat: update, publish every publish_every
//     a = seat.next_actor(steps).act(o, context)      (waiting for min_env_steps_per_update new
//     o', r, ... = envs[i].step(a)                     steps first, when set); report
//     lock: learner.observe(step, i); count steps
//
// observe(), global_step's increments and the hand-over of finished episodes happen under one
// mutex that a checkpoint also takes. Callbacks run on the calling thread only, never during an
// update. Requires learner.observes_while_updating() (require_replay_feed).
void feed_replay(const ReplayFeedPlan& plan, algos::OffPolicyLearner& learner,
                 std::vector<std::unique_ptr<envs::VectorEnv>>& envs, torch::Device device, uint64_t seed,
                 core::EpisodeStats& episodes, TrainingState& state, int64_t total_steps,
                 int64_t checkpoint_interval_steps, const TrainingCallbacks& callbacks);

// Refuses, in one line naming `policy`, a learner that cannot observe while it updates or cannot
// make copies of its acting network; returns `copies` of them.
std::vector<std::unique_ptr<algos::ActorReplica>> require_replay_feed(algos::OffPolicyLearner& learner,
                                                                      const std::string& policy, int copies);

}  // namespace concord::policies
