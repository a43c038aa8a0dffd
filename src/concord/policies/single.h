#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include <torch/types.h>

#include "concord/algos/off_policy_learner.h"
#include "concord/algos/on_policy_learner.h"
#include "concord/envs/vector_env.h"
#include "concord/explore/bonus.h"
#include "concord/policies/policy.h"
#include "concord/policies/policy_context.h"

namespace concord::policies {

// The `single` distribution policy: one thread steps a synchronous VectorEnv, the learner's
// Actor acts in-line for every env at once, and the learner learns in the same thread. It is the
// reference behaviour that other policies must match. It drives both algorithm families
// (algos/learner.h) with one loop, through runtime::LearnerDrive:
//
// On-policy (OnPolicyLearner), every rollout_length() steps:
//   repeat: for t < T: a_t ~ pi(o_t); o_{t+1}, r_t, term_t, trunc_t = envs.step(a_t)
//           final_observations_t = the ended episode's last o where truncated;  bootstrap = V(o_T)
//           metrics = learner.update(rollout, progress = global_step / total_steps)
//
// Off-policy (OffPolicyLearner), every env step (see off_policy_learner.h):
//   repeat: transition = one step of every env (transition_collector.h); learner.observe(it)
//           global_step += B;  for every multiple of train_frequency() passed beyond
//           learning_starts(): metrics = learner.update(global_step, progress)
//   The updates fall on the same env steps as CleanRL's `global_step > learning_starts and
//   global_step % train_frequency == 0` with one env, and keep that ratio with B envs; they
//   depend on global_step alone, so a resumed run updates where the uninterrupted one would.
//
// Continuous actions are clipped to the action space's bounds at the environment boundary
// (what Gymnasium's ClipAction wrapper does); the experience stores the unclipped action. All
// tensors live on `device`. Besides the learner's metrics, every update reports charts/SPS and
// time/rollout_seconds, time/update_seconds (wall time spent collecting and learning since the
// loop started), so a benchmark can tell which side bounds throughput. With an exploration
// `bonus` (on-policy only), each rollout's rewards get it added before the update (see
// exploration_bonus.h). Not thread-safe.
//
// `ranks_in_lockstep` > 1 is for replicas of this loop on other ranks (multi_learner), each with
// as many envs: global_step then counts every rank's env steps, so total_timesteps, checkpoint
// intervals and progress mean the same whatever the number of ranks.
class SinglePolicy : public Policy {
 public:
  // Throws std::invalid_argument for an asynchronous env, or a bonus with an off-policy learner.
  SinglePolicy(envs::BatchedEnvs& env, algos::Learner& learner, torch::Device device, explore::Bonus* bonus = nullptr,
               int ranks_in_lockstep = 1);
  // The same, owning its environments.
  SinglePolicy(std::unique_ptr<envs::BatchedEnvs> env, algos::Learner& learner, torch::Device device,
               explore::Bonus* bonus = nullptr, int ranks_in_lockstep = 1);

  // Trains until state.global_step >= total_steps or callbacks.should_stop() says so.
  // Throws std::runtime_error naming the update and step if a loss becomes NaN or infinite.
  void train(TrainingState& state, int64_t total_steps, int64_t checkpoint_interval_steps,
             const TrainingCallbacks& callbacks) override;

 private:
  std::unique_ptr<envs::BatchedEnvs> owned_env_;
  envs::BatchedEnvs& env_;
  algos::Learner& learner_;
  torch::Device device_;
  explore::Bonus* bonus_;  // may be null
  int ranks_in_lockstep_;
  core::EpisodeStats episodes_;
};

// The `single` policy of a run: refuses env.num_threads > 1 (that is `sync_vector`).
std::unique_ptr<Policy> make_single_policy(const PolicyContext& context);

}  // namespace concord::policies
