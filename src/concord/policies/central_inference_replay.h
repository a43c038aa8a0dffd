#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <torch/types.h>

#include "concord/algos/off_policy_learner.h"
#include "concord/core/episode_stats.h"
#include "concord/envs/vector_env.h"
#include "concord/explore/bonus.h"
#include "concord/policies/central_inference_config.h"
#include "concord/policies/policy.h"
#include "concord/policies/policy_context.h"

namespace concord::policies {

// The `central_inference` policy with an off-policy learner (DQN, SAC): SEED RL's arrangement
// (Espeholt et al., 2020) on threads of one process. Agents only step environments; predictors
// act for every agent at once; the learner, on the calling thread, learns from the replay the
// agents fill.
//
//   agent a (own envs) --observations--> prediction queue --> predictor p: one act() on up to
//     ^                                                         prediction_batch rows, with its own
//     +---------------------- actions <-------------------------+ copy of the acting network
//   agent a: learner.observe(o, a, r, ..., stream a)    learner: update; publish its parameters
//
// Predictors pick up the learner's newest parameters before each batch (they are published after
// every update), so actions are at most the updates of one batch behind. Every agent explores as
// the algorithm's single actor does (actor 0 of 1: DQN's one epsilon schedule), since a batch acts
// under one context. The replay ratio is the algorithm's, pinned from both sides: the learner's
// u-th update waits until the agents have stored (u - 1) x train_frequency steps past
// learning_starts, and the agents wait while they are train_frequency steps ahead of the updates
// (plus one step of each agent in flight), so the learner sees the data `single` would at each
// update, up to the order of the agents' steps.
//
// It is feed_replay (replay_feed.h) with a BatchedActing service as every agent's Actor: the
// same steps, checkpoints, episodes and errors as `apex`, its threads named "agent a" and
// "predictor p". train() stops at total_steps (agents claim steps before taking them), at
// should_stop or at the first failure of any thread, rethrown naming it.
//
// Refused at construction, in one line: a learner that cannot observe while it updates or copy
// its acting network, an exploration bonus, settings of the on-policy layout (trainers,
// training_batch, max_policy_lag, dynamic_adjustment), env.batch_size != 0, env.num_threads != 1,
// or env.num_envs not divisible by agents.
class CentralInferenceReplayPolicy : public Policy {
 public:
  CentralInferenceReplayPolicy(const CentralInferenceConfig& config, const envs::VectorEnvConfig& env_config,
                               algos::OffPolicyLearner& learner, torch::Device device, const explore::Bonus* bonus);

  void train(TrainingState& state, int64_t total_steps, int64_t checkpoint_interval_steps,
             const TrainingCallbacks& callbacks) override;

 private:
  CentralInferenceConfig config_;
  algos::OffPolicyLearner& learner_;
  torch::Device device_;
  uint64_t seed_;
  std::vector<std::unique_ptr<envs::VectorEnv>> envs_;
  std::vector<std::unique_ptr<algos::ActorReplica>> replicas_;  // one per predictor
  core::EpisodeStats episodes_;
};

// The `central_inference` policy of a run with an off-policy learner.
std::unique_ptr<Policy> make_central_inference_replay_policy(const PolicyContext& context,
                                                             const CentralInferenceConfig& config);

}  // namespace concord::policies
