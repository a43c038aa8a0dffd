#pragma once

#include <cstdint>
#include <memory>

#include <torch/types.h>

#include "concord/algos/learner.h"
#include "concord/core/episode_stats.h"
#include "concord/envs/vector_env.h"
#include "concord/explore/bonus.h"
#include "concord/policies/async_learner_config.h"
#include "concord/policies/policy.h"
#include "concord/policies/policy_context.h"
#include "concord/policies/runtime/split_drive.h"

namespace concord::policies {

// The `async_learner` distribution policy: one thread acts while the calling thread learns, as
// Sample Factory and cleanba arrange it. On two cores the update and the environment steps then
// take a core each, instead of taking turns on one. It drives both algorithm families with one
// loop, through runtime::SplitDrive (split_drive.h): the collector thread gathers what `single`
// collects (a rollout, or one step of every env) with its own copy of the learner's network, and
// hands it to the calling thread, which takes it and runs the updates it made due.
//
//   collector thread:  for each unit of collection (c: the updates due before it):
//                        wait until the learner has published version v = max(0, c - max_policy_lag)
//                        copy exactly version v into its own network (once per version)
//                        collect until an update is due: a rollout (on-policy), or the steps up
//                        to one after which updates are due (off-policy, at most 64)
//                        push them (with the version that acted) to the learner
//   learner (caller):  for each one pushed: take it (on-policy: keep the rollout; off-policy:
//                        learner.observe it); global_step += its env steps
//                        every update due now: learner.update (on-policy: with the exploration
//                        bonus); publish the parameters
//
// The updates fall where `single` has them (a rollout each; off-policy: learning_starts,
// train_frequency), and an off-policy learner fills and samples its replay on the calling thread
// in `single`'s order: an update sees exactly the experience it would under `single`; only the
// parameters that acted differ, by up to max_policy_lag updates. On-policy that lag must be
// corrected (Learner::corrects_policy_lag: PPO's ratio against the behaviour log-probabilities,
// A2C's V-trace; one that cannot is refused at construction); Q-learning and SAC, learning
// off-policy from a replay, need none. With max_policy_lag = 1 (the default) rollout k + 1 is
// acted by the parameters of update k - 1 while update k runs; with 0, acting and learning take
// turns.
// The version that acts never depends on the threads' speeds (the last max_policy_lag + 1
// versions are kept for it), so a run repeats exactly. An off-policy collector waits for a version
// by spinning for a short while before it sleeps: the wait is about one update long, and waking a
// sleeping thread costs the learner a system call per update (bench/RESULTS.md, "DQN on CartPole").
//
// charts/policy_lag reports the lag of the experience an update is triggered by,
// time/learner_wait_seconds how long the learner waited for experience.
//
// Everything a checkpoint or a callback sees belongs to the calling thread: the learner, the
// episode statistics (the collector hands finished episodes over with their experience) and
// TrainingState, whose global_step counts the steps the learner has taken in. Experience still
// being collected is not counted; a resume collects it again. The collector is also paused, between
// units, while on_checkpoint runs, so that nothing steps the envs during a save. Every wait between
// the threads times out after wait_timeout_seconds with a line naming it; an error on either thread
// stops and joins both, then is rethrown here. Recurrent agents: the collector carries their state
// (runtime::Collector), and hands it on with the rollout or each transition.
class AsyncLearnerPolicy : public Policy {
 public:
  // Throws std::invalid_argument if the env is asynchronous (env.batch_size > 0), the config is
  // invalid, or the learner cannot run (runtime::make_split_drive: an on-policy one that does not
  // correct the lag, an off-policy one without an actor replica, which is NeedsOneThreadPolicy).
  AsyncLearnerPolicy(AsyncLearnerConfig config, std::unique_ptr<envs::VectorEnv> env, algos::Learner& learner,
                     torch::Device device, uint64_t seed, explore::Bonus* bonus = nullptr);

  void train(TrainingState& state, int64_t total_steps, int64_t checkpoint_interval_steps,
             const TrainingCallbacks& callbacks) override;

 private:
  AsyncLearnerConfig config_;
  std::unique_ptr<envs::VectorEnv> env_;
  std::unique_ptr<runtime::SplitDrive> drive_;
  uint64_t seed_;
  core::EpisodeStats episodes_;
};

// The `async_learner` policy of a run, for a learner of either family.
std::unique_ptr<Policy> make_async_learner_policy(const PolicyContext& context, const AsyncLearnerConfig& config);

}  // namespace concord::policies
