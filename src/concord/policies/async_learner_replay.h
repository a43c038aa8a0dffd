#pragma once

#include <cstdint>
#include <memory>

#include <torch/types.h>

#include "concord/algos/off_policy_learner.h"
#include "concord/core/episode_stats.h"
#include "concord/envs/vector_env.h"
#include "concord/policies/async_learner_config.h"
#include "concord/policies/policy.h"
#include "concord/policies/policy_context.h"

namespace concord::policies {

// The `async_learner` policy for off-policy learners (DQN, SAC; the registry's factory for that
// family): `single`'s off-policy loop (off_policy_learner.h) with its
// acting moved to the collector thread, which acts from a replica of the learner's network
// (OffPolicyLearner::make_actor_replica):
//
//   collector thread:  for each step i of every env (global step g_i = start + i x num_envs):
//                        c_i = the updates the loop has due before step i (learning_starts,
//                              train_frequency: as `single` schedules them)
//                        wait until the learner has published version v = max(0, c_i - max_policy_lag)
//                        transition i = act with exactly version v; step the envs
//                        push transition i to the learner
//   learner (caller):  for i = 0, 1, ...:
//                        pop transition i; learner.observe(it); global_step += num_envs
//                        every update due now: learner.update(global_step, progress); publish
//
// The replay is filled and sampled on the calling thread, in `single`'s order, so an update sees
// exactly the transitions it would under `single`; only the parameters that acted differ (up to
// max_policy_lag updates old, which Q-learning and SAC, learning off-policy from a replay,
// need no correction for). With max_policy_lag = 0 the loop is `single`'s, acted on another
// thread with that thread's own generator.
// The collector hands over one segment per update (the steps up to one after which updates are
// due), and waits for a version by spinning for a short while (kSpinSeconds) before it sleeps:
// the wait is about one update long, and waking a sleeping thread costs the learner a system
// call per update, a measurable share of a small update (bench/RESULTS.md, "DQN on CartPole").
//
//
// charts/policy_lag reports the lag of the step an update is triggered by,
// time/learner_wait_seconds how long the learner waited for steps. Every wait between the
// threads times out after wait_timeout_seconds with a line naming it; an error on either thread
// stops and joins both, then is rethrown from train().
class AsyncLearnerReplayPolicy : public Policy {
 public:
  // Throws std::invalid_argument if the env is asynchronous (env.batch_size > 0) or the config is
  // invalid, and NeedsOneThreadPolicy if the learner cannot make an actor replica.
  AsyncLearnerReplayPolicy(AsyncLearnerConfig config, std::unique_ptr<envs::VectorEnv> env,
                           algos::OffPolicyLearner& learner, torch::Device device, uint64_t seed);

  void train(TrainingState& state, int64_t total_steps, int64_t checkpoint_interval_steps,
             const TrainingCallbacks& callbacks) override;

 private:
  AsyncLearnerConfig config_;
  std::unique_ptr<envs::VectorEnv> env_;
  algos::OffPolicyLearner& learner_;
  torch::Device device_;
  uint64_t seed_;
  core::EpisodeStats episodes_;
  std::unique_ptr<algos::ActorReplica> replica_;  // the collector's network
};

// The `async_learner` policy of a run with an off-policy learner.
std::unique_ptr<Policy> make_async_learner_replay_policy(const PolicyContext& context,
                                                         const AsyncLearnerConfig& config);

}  // namespace concord::policies
