#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include <torch/types.h>

#include "concord/envs/vector_env.h"
#include "concord/explore/bonus.h"
#include "concord/policies/policy.h"
#include "concord/policies/policy_context.h"

namespace concord::policies {

// The `single` distribution policy: one thread steps a synchronous VectorEnv, the learner's
// network acts as the Actor fragment, and every rollout_length() steps the Rollout goes to
// learner.update(). It is the reference behaviour that other policies must match.
//
//   repeat: for t < T: a_t ~ pi(o_t); o_{t+1}, r_t, term_t, trunc_t = envs.step(a_t)
//           truncation_values_t = V(final o) where truncated;  bootstrap = V(o_T)
//           metrics = learner.update(rollout, progress = global_step / total_steps)
//
// Continuous actions are clipped to the action space's bounds at the environment boundary
// (what Gymnasium's ClipAction wrapper does); the rollout stores the unclipped sample. All
// tensors live on `device`. Besides the learner's metrics, every update reports charts/SPS and
// time/rollout_seconds, time/update_seconds (wall time spent collecting and learning since the
// loop started), so a benchmark can tell which side bounds throughput. With an exploration
// `bonus`, each rollout's rewards get it added before the update (see exploration_bonus.h).
// Not thread-safe.
//
// `ranks_in_lockstep` > 1 is for replicas of this loop on other ranks (multi_learner), each with
// as many envs: global_step then counts every rank's env steps, so total_timesteps, checkpoint
// intervals and progress mean the same whatever the number of ranks.
class SinglePolicy : public Policy {
 public:
  SinglePolicy(envs::VectorEnv& env, algos::Learner& learner, torch::Device device, explore::Bonus* bonus = nullptr,
               int ranks_in_lockstep = 1);
  // The same, owning its environments.
  SinglePolicy(std::unique_ptr<envs::VectorEnv> env, algos::Learner& learner, torch::Device device,
               explore::Bonus* bonus = nullptr, int ranks_in_lockstep = 1);

  // Trains until state.global_step >= total_steps or callbacks.should_stop() says so.
  // Throws std::runtime_error naming the update and step if a loss becomes NaN or infinite.
  void train(TrainingState& state, int64_t total_steps, int64_t checkpoint_interval_steps,
             const TrainingCallbacks& callbacks) override;

 private:
  std::unique_ptr<envs::VectorEnv> owned_env_;
  envs::VectorEnv& env_;
  algos::Learner& learner_;
  torch::Device device_;
  explore::Bonus* bonus_;  // may be null
  int ranks_in_lockstep_;
  core::EpisodeStats episodes_;
};

// The `single` policy of a run: refuses env.num_threads > 1 (that is `sync_vector`).
std::unique_ptr<Policy> make_single_policy(const PolicyContext& context);

}  // namespace concord::policies
