#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <torch/types.h>

#include "concord/algos/off_policy_learner.h"
#include "concord/core/episode_stats.h"
#include "concord/envs/vector_env.h"
#include "concord/policies/apex_config.h"
#include "concord/policies/policy.h"
#include "concord/policies/policy_context.h"

namespace concord::policies {

// The `apex` distribution policy (Ape-X, Horgan et al., 2018) for off-policy learners, on threads
// of one process: A actor threads fill the learner's replay while the calling thread learns from
// it, with no schedule between them.
//
//   actor i (own envs, own network copy):        learner (the calling thread):
//     every refresh_every of its env steps:         wait until global_step > learning_starts
//       copy the latest published parameters        repeat as fast as it can:
//     a = replica.act(o, {global_step, total,         metrics = learner.update(global_step, ...)
//                         i, A})                        every publish_every updates: publish
//     o', r, ... = its envs.step(a)                     report (charts/SPS, time/*)
//     lock: learner.observe(step, stream i);        until global_step >= total_steps
//           global_step += its envs
//
// Actor i of A > 1 acts with Ape-X's epsilon eps_i = epsilon^(1 + alpha i / (A - 1)) (policy.apex,
// 0.4 and 7; ActingContext::epsilon, for algorithms that have one). Where its replica gives the inputs
// of initial priorities (ActorReplica::priority_inputs: its Q estimates), each step goes to
// observe() with them, and the learner starts each transition at its TD error. The learner's update() runs
// beside the actors' observe() (OffPolicyLearner::observes_while_updating), and its updates are
// decoupled from env steps: update() is called whenever the previous one is done, not every
// train_frequency() steps, so the replay ratio depends on how fast acting and learning run on the
// machine. charts/updates_per_env_step reports it (since the first update of this run);
// policy.apex.max_env_steps_per_update bounds it from below.
//
// Consistency: observe() calls, global_step's increments and the hand-over of finished episodes
// happen under one mutex; a checkpoint takes it, so no transition is added while the learner and
// global_step are saved (actors keep acting and wait to observe). Callbacks run on the calling
// thread only, one at a time, never during an update: on_episode is called there for the episodes
// the actors finished since the last update. Actors claim env steps before taking them, so the
// run ends at total_steps exactly when num_envs / actors divides it.
//
// Errors: an actor's exception stops every thread; they are joined and the error is rethrown
// naming the actor. A non-finite metric stops the run (check_finite). A wait for the other side's
// progress (the learner for steps, a throttled actor for an update) times out after
// wait_timeout_seconds with a line naming it; the one mutex is held only for an observe() or a
// checkpoint. No thread outlives train().
class ApexPolicy : public Policy {
 public:
  // Makes one ActorReplica and one VectorEnv (env_config.num_envs / actors envs: the run's
  // [i x k, (i + 1) x k), seeded as `single` seeds them) per actor. Throws std::invalid_argument, in one line each, for
  // an invalid config, num_envs not divisible by the actors, env.num_threads != 1 or env.batch_size != 0, or a learner
  // without an ActorReplica or that cannot observe while updating.
  ApexPolicy(ApexConfig config, const envs::VectorEnvConfig& env_config, algos::OffPolicyLearner& learner,
             torch::Device device);

  void train(TrainingState& state, int64_t total_steps, int64_t checkpoint_interval_steps,
             const TrainingCallbacks& callbacks) override;

 private:
  ApexConfig config_;
  algos::OffPolicyLearner& learner_;
  torch::Device device_;
  uint64_t seed_;  // the run's, for the actors' generators
  std::vector<std::unique_ptr<envs::VectorEnv>> envs_;
  std::vector<std::unique_ptr<algos::ActorReplica>> replicas_;
  core::EpisodeStats episodes_;
};

// The `apex` policy of a run (the registry has already refused an on-policy learner).
std::unique_ptr<Policy> make_apex_policy(const PolicyContext& context, const ApexConfig& config);

}  // namespace concord::policies
