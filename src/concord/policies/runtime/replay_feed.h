#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "concord/algos/off_policy_learner.h"
#include "concord/core/episode_stats.h"
#include "concord/policies/policy.h"
#include "concord/policies/runtime/episode_message.h"
#include "concord/policies/runtime/parameter_versions.h"
#include "concord/policies/runtime/replay_pacing.h"
#include "concord/policies/runtime/workers.h"

namespace concord::policies::runtime {

// The published parameters the feeders act from: the newest flat copy of the learner's.
using PublishedParameters = runtime::ParameterVersions<at::Tensor>;

// What the threads that feed a replay share with its learner: the steps stored, the learner's
// pace, and the parameters it publishes. Thread-safe.
class ReplayInlet {
 public:
  virtual ~ReplayInlet() = default;
  // True once the run stops: a feeder then returns.
  virtual bool stopping() const = 0;
  // The env steps stored: the run's global_step.
  virtual int64_t stored() const = 0;
  virtual int64_t total_steps() const = 0;
  // max_env_steps_per_update: blocks while stored() is not below the learner's allowance, which
  // grows by that many steps with every update (and moves past stored() whenever an update finds
  // no batch in the replay, since only more steps can give it one). `who` names the waiter when
  // the learner takes longer than the run's timeout.
  virtual void wait_for_learner(const std::string& who) = 0;
  // Observes `steps` (each [B, ...], B envs of stream `stream`, in order) into the replay, counting
  // B env steps each and the episodes `finished` ended, under the lock a checkpoint takes. Stores
  // nothing, and returns false, once total_steps() are stored.
  virtual bool store(const std::vector<algos::TensorMap>& steps, int stream, const FinishedEpisodes& finished) = 0;
  // The learner's parameters, published every publish_every updates (and before the first).
  virtual PublishedParameters& parameters() = 0;
};

// What differs between the policies that feed a replay.
struct ReplayFeedPlan {
  std::string policy;       // names the run in errors: "apex"
  std::string feeder_noun;  // what feeds it, in errors: "actors" ("the actors took no step ...")
  ReplayPacing pace;        // the learner's pace against the feeders (replay_pacing.h)
  std::string pace_key;     // the setting a feeder waiting for the learner is told to raise
  // One exploration rate per actor that explores differently (Ape-X's, policy.apex.epsilon and alpha;
  // -1: the algorithm's schedule), or none when every actor explores alike.
  std::vector<double> actor_epsilons;
  // Called once per run, before the learner waits for its first steps: starts the threads that
  // feed the replay, on `workers`, storing into `inlet` (actor threads: actor_threads.h; a thread
  // serving actor processes: apex_processes.h).
  std::function<void(runtime::Workers& workers, ReplayInlet& inlet)> start_feeders;
};

// Feeder threads fill the learner's replay while the calling thread learns from it (Ape-X's
// topology): the learner runs learn_back_to_back, from the first step past learning_starts,
// publishing its parameters every publish_every updates. Returns at total_steps, at
// should_stop, or rethrows the first failure of any thread, naming it, after joining every
// thread.
//
// observe(), global_step's increments and the hand-over of finished episodes happen under one
// mutex that a checkpoint also takes. Callbacks run on the calling thread only, never during an
// update. Requires learner.observes_while_updating() (require_replay_feed).
void feed_replay(const ReplayFeedPlan& plan, algos::OffPolicyLearner& learner, core::EpisodeStats& episodes,
                 TrainingState& state, int64_t total_steps, int64_t checkpoint_interval_steps,
                 const TrainingCallbacks& callbacks);

// Refuses, in one line naming `policy`, a learner that cannot observe while it updates or cannot
// make copies of its acting network; returns `copies` of them.
std::vector<std::unique_ptr<algos::ActorReplica>> require_replay_feed(algos::OffPolicyLearner& learner,
                                                                      const std::string& policy, int copies);

}  // namespace concord::policies::runtime
