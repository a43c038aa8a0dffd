#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "concord/comm/communicator.h"
#include "concord/comm/watchdog.h"
#include "concord/core/config_fields.h"
#include "concord/core/episode_stats.h"
#include "concord/envs/vector_env.h"
#include "concord/explore/bonus.h"
#include "concord/policies/policy.h"
#include "concord/policies/policy_context.h"

namespace concord::policies {

// How the `actor_processes` policy runs (keys policy.actor_processes.<field>).
struct ActorProcessesConfig {
  // true: actors wait for the parameters of update k before collecting rollout k + 1 (on-policy).
  // false: actors collect rollout k + 1 while the learner trains on rollout k (one update of
  // policy lag, reported as charts/policy_lag), overlapping acting and learning.
  bool synchronous = true;
  // Parameters go to the actors after every this many updates.
  int64_t broadcast_every = 1;
  // "continue": an actor that dies or stops answering is dropped, logged, and the run goes on
  // with the others; "abort": the run fails naming the actor.
  std::string on_actor_failure = "continue";

  // Throws std::invalid_argument listing every bad field with its value.
  void validate() const;
  static const core::ConfigFields<ActorProcessesConfig>& fields();
};

// The `actor_processes` distribution policy (MSRL's multi-actor, single-learner layout): rank 0
// is the learner and steps no envs; ranks 1..A each step env.num_envs / A envs with their own
// copy of the model and send every rollout to the learner by c10d send/recv. The learner
// concatenates the live actors' rollouts along the env dimension, updates, and sends the
// parameters (and model buffers) back:
//
//   actor a:  collect rollout k with parameters v -> send (rollout, episodes, v) to rank 0
//             -> [synchronous] wait for control k, then collect k + 1
//             -> [asynchronous] collect k + 1, then wait for control k
//   learner:  receive rollout k from every live actor -> learner.update -> send control k
//             (continue or stop; parameters follow every broadcast_every updates)
//
// Only point-to-point messages are used after start-up, so an actor that dies (its connection
// closes) or stalls can be dropped without stalling the others. The learner waits for an actor's
// rollout, and for its control and parameters to be taken, at most half of comm.timeout_seconds
// (the communicator's timeout), then abandons those messages (comm::Request::abort, which keeps
// the connections; a Gloo timeout would close them all) and names the actor: the healthy actors,
// which wait for their control the whole timeout, are served before they give up. The learner's
// state is never touched by an actor's failure; rank 0's callbacks write checkpoints.
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
  struct ActorLink;
  void learn(TrainingState& state, int64_t total_steps, int64_t checkpoint_interval_steps,
             const TrainingCallbacks& callbacks);
  void act();
  // Drops actor `link` after `error` (or throws, under on_actor_failure = "abort").
  void actor_failed(ActorLink& link, const std::string& error);
  // Waits for `link`'s messages in flight until `deadline`. True when they completed; otherwise
  // the actor failed or stalled (`missed` says what it did not do in time) and was dropped.
  bool settle(ActorLink& link, comm::Watchdog::Clock::time_point deadline, const std::string& missed);

  ActorProcessesConfig config_;
  envs::VectorEnvConfig env_config_;  // one actor's share
  algos::OnPolicyLearner& learner_;
  torch::Device device_;
  comm::Communicator& communicator_;
  explore::Bonus* bonus_;
  std::vector<std::unique_ptr<ActorLink>> actors_;  // on the learner
  std::unique_ptr<comm::Watchdog> watchdog_;        // on the learner: bounds the waits on actors
  core::EpisodeStats episodes_;
};

std::unique_ptr<Policy> make_actor_processes_policy(const PolicyContext& context, const ActorProcessesConfig& config);

}  // namespace concord::policies
