#pragma once

#include <cstdint>
#include <memory>

#include <torch/types.h>

#include "concord/algos/off_policy_learner.h"
#include "concord/comm/communicator.h"
#include "concord/core/episode_stats.h"
#include "concord/envs/vector_env.h"
#include "concord/policies/apex_config.h"
#include "concord/policies/policy.h"

namespace concord::policies {

// The `apex` policy under `concord launch` (Ape-X, Horgan et al., 2018, with actors in
// processes): rank 0 learns, ranks 1..A act. Each actor steps its share of env.num_envs with its
// own ActorReplica and sends its transitions in segments of refresh_every env steps (rounded up
// to whole steps of its envs) on the experience link (runtime/experience_link.h); the learner
// answers each segment with a control and, when it has published newer parameters since, the
// parameters: Ape-X's refresh every 400 frames.
//
//   actor a (rank a + 1):                         learner (rank 0): feed_replay (replay_feed.h)
//     wait for control 0 and the parameters         calling thread: learn_back_to_back
//     collect segment 1, send it                    communication thread, the replay's feeder:
//     repeat:                                         send control 0 and the parameters
//       collect segment k + 1 (overlaps the reply)    take each actor's segment in turn, store
//       wait for control k (stop, or go on)             it (stream a), then answer it
//       send segment k + 1
//
// Actor a of A acts with Ape-X's epsilon (ApexConfig::actor_epsilon), with global_step the learner's at
// its last control plus its own steps since. Where the replica gives the inputs of initial
// priorities (ActorReplica::priority_inputs), the actor computes them for each segment at once
// and sends them with it, as Ape-X's actors do. Answering only once a segment is stored holds a
// fast actor back by the replay (and by max_env_steps_per_update), never queued in memory. The
// run ends once total_steps are stored; segments in flight then are dropped.
//
// Every wait on an actor is bounded by policy.apex.wait_timeout_seconds (under on_actor_failure
// = "continue" at most half of comm.timeout_seconds, so that the healthy actors, which wait for
// their control that long, are answered in time). An actor that stalls or dies is dropped with a
// warning naming its rank and the others train on ("continue", the default; rank 0 tells
// `concord launch` the run survives it), or fails the run naming it ("abort").
class ApexProcessesPolicy : public Policy {
 public:
  // `env_config` is the whole run's. Throws std::invalid_argument, in one line each, for actors
  // != world_size - 1, num_envs not divisible by the actors, env.batch_size != 0, the NCCL
  // backend, a learner without an ActorReplica or without observes_while_updating(), or an
  // invalid config.
  ApexProcessesPolicy(ApexConfig config, const envs::VectorEnvConfig& env_config, algos::OffPolicyLearner& learner,
                      torch::Device device, comm::Communicator& communicator);
  ~ApexProcessesPolicy() override;
  bool survives_failed_ranks() const override { return config_.on_actor_failure == "continue"; }

  void train(TrainingState& state, int64_t total_steps, int64_t checkpoint_interval_steps,
             const TrainingCallbacks& callbacks) override;

 private:
  void act(int64_t total_steps);

  ApexConfig config_;
  envs::VectorEnvConfig env_config_;  // the whole run's
  algos::OffPolicyLearner& learner_;
  torch::Device device_;
  comm::Communicator& communicator_;
  std::unique_ptr<algos::ActorReplica> replica_;  // what an actor rank acts with
  core::EpisodeStats episodes_;
};

}  // namespace concord::policies
