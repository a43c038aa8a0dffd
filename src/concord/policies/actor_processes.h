#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "concord/comm/communicator.h"
#include "concord/core/episode_stats.h"
#include "concord/envs/vector_env.h"
#include "concord/explore/bonus.h"
#include "concord/policies/actor_processes_config.h"
#include "concord/policies/policy.h"
#include "concord/policies/policy_context.h"

namespace concord::policies {

// The `actor_processes` distribution policy (MSRL's multi-actor, single-learner layout): rank 0
// is the learner and steps no envs; ranks 1..A each step env.num_envs / A envs with their own
// copy of the model and send every rollout to the learner by c10d send/recv. The learner
// concatenates the live actors' rollouts along the env dimension, updates, and sends the
// parameters (and model buffers) back:
//
//   actor a:  collect rollout k -> send it and its finished episodes to rank 0
//             -> [synchronous] wait for control k, then collect k + 1
//             -> [asynchronous] collect k + 1, then wait for control k
//   learner:  receive rollout k from every live actor -> learner.update -> send control k
//             (continue or stop; parameters follow every broadcast_every updates)
//
// The rollouts and controls travel on the experience link (runtime/experience_link.h), so an
// actor that dies or stalls is dropped without stalling the others. The learner waits for an
// actor's rollout, and for its control and parameters to be taken, at most half of
// comm.timeout_seconds: the healthy actors, which wait for their control the whole timeout, are
// served before they give up. The learner's state is never touched by an actor's failure; rank
// 0's callbacks write checkpoints.
class ActorProcessesPolicy : public Policy {
 public:
  // `env_config` is the whole run's (num_envs over all actors). Throws std::invalid_argument for
  // fewer than 2 ranks, num_envs not divisible by the actors, or a bad config value.
  // `bonus` (may be null) is applied by the learner to every received rollout: one count table
  // for all actors, exactly.
  ActorProcessesPolicy(const ActorProcessesConfig& config, const envs::VectorEnvConfig& env_config,
                       algos::OnPolicyLearner& learner, torch::Device device, comm::Communicator& communicator,
                       explore::Bonus* bonus = nullptr);
  ~ActorProcessesPolicy() override;
  bool survives_failed_ranks() const override { return config_.on_actor_failure == "continue"; }

  void train(TrainingState& state, int64_t total_steps, int64_t checkpoint_interval_steps,
             const TrainingCallbacks& callbacks) override;

 private:
  void learn(TrainingState& state, int64_t total_steps, int64_t checkpoint_interval_steps,
             const TrainingCallbacks& callbacks);
  void act();

  ActorProcessesConfig config_;
  envs::VectorEnvConfig env_config_;  // one actor's share
  algos::OnPolicyLearner& learner_;
  torch::Device device_;
  comm::Communicator& communicator_;
  explore::Bonus* bonus_;
  core::EpisodeStats episodes_;
};

std::unique_ptr<Policy> make_actor_processes_policy(const PolicyContext& context, const ActorProcessesConfig& config);

}  // namespace concord::policies
