#pragma once

#include <cstdint>
#include <memory>

#include <torch/types.h>

#include "concord/algos/off_policy_learner.h"
#include "concord/algos/on_policy_learner.h"
#include "concord/core/episode_stats.h"
#include "concord/envs/vector_env.h"
#include "concord/explore/bonus.h"
#include "concord/policies/async_learner_config.h"
#include "concord/policies/policy.h"
#include "concord/policies/policy_context.h"

namespace concord::policies {

// The `async_learner` distribution policy: one thread acts while the calling thread learns, as
// Sample Factory and cleanba arrange it. On two cores the update and the environment steps then
// take a core each, instead of taking turns on one.
//
// On-policy learners (PPO, A2C): the collector thread collects rollout k + 1 while the calling
// thread learns from rollout k.
//
//   collector thread:  for k = 0, 1, ...:
//                        wait until the learner has published version v = max(0, k - max_policy_lag)
//                        copy exactly version v into its own network (one flat copy)
//                        rollout k = collect(its network, envs)   (RolloutCollector, as `single`)
//                        push rollout k (with the version it acted with) to the learner
//   learner (caller):  for k = 0, 1, ...:
//                        pop rollout k; bonus; learner.update(rollout k); publish parameters
//
// With max_policy_lag = 1 (the default) rollout k + 1 is acted by the parameters of update
// k - 1 while update k runs: a policy lag of one update, which the algorithm must correct
// (Learner::corrects_policy_lag: PPO's ratio against the behaviour log-probabilities, A2C's
// V-trace); the factory refuses one that cannot.
//
// Off-policy learners (DQN, SAC) are driven by AsyncLearnerReplayPolicy (async_learner_replay.h),
// the registry's factory for that family under the same name.
//
// Both: charts/policy_lag reports the lag of the experience an update is triggered by,
// time/learner_wait_seconds how long the learner waited for experience. The version that acts
// never depends on the threads' speeds (the last max_policy_lag + 1 versions are kept for it),
// so a run repeats exactly.
//
// Everything a checkpoint or a callback sees belongs to the calling thread: the learner, the
// episode statistics (the collector hands finished episodes over with their experience) and
// TrainingState, whose global_step counts the steps already learned from (on-policy) or
// observed (off-policy). Experience still being collected is not counted; a resume collects it
// again. An on-policy collector is also paused, at a rollout boundary, while on_checkpoint runs,
// so that nothing steps the envs during a save (the exploration bonus may be among what is
// saved); an off-policy collector touches only its replica and envs, which a checkpoint does not
// save, and keeps acting. Every wait between the threads times out after wait_timeout_seconds
// with a line naming it; an error on either thread stops and joins both, then is rethrown here.
class AsyncLearnerPolicy : public Policy {
 public:
  // Throws std::invalid_argument if the env is asynchronous (env.batch_size > 0) or the config is
  // invalid.
  AsyncLearnerPolicy(AsyncLearnerConfig config, std::unique_ptr<envs::VectorEnv> env, algos::OnPolicyLearner& learner,
                     torch::Device device, uint64_t seed, explore::Bonus* bonus = nullptr);

  void train(TrainingState& state, int64_t total_steps, int64_t checkpoint_interval_steps,
             const TrainingCallbacks& callbacks) override;

 private:
  AsyncLearnerConfig config_;
  std::unique_ptr<envs::VectorEnv> env_;
  algos::OnPolicyLearner& learner_;
  torch::Device device_;
  uint64_t seed_;
  explore::Bonus* bonus_;  // may be null
  core::EpisodeStats episodes_;
};

// The `async_learner` policy of a run with an on-policy learner: refuses one that does not correct
// policy lag (A2C without algo.a2c.vtrace) when max_policy_lag > 0.
std::unique_ptr<Policy> make_async_learner_policy(const PolicyContext& context, const AsyncLearnerConfig& config);

}  // namespace concord::policies
