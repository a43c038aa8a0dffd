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
// processes): rank 0 learns, ranks 1..A act, and transitions and parameters travel by c10d
// send/recv (Gloo). Each actor steps its share of env.num_envs with its own ActorReplica and sends
// its transitions in segments of refresh_every env steps (rounded up to whole steps of its envs);
// the learner answers each segment with a control message and, when it has published newer
// parameters since, the parameters: Ape-X's refresh every 400 frames.
//
//   actor a (rank a + 1):                         learner (rank 0), calling thread:
//     wait for control 0 and the parameters         repeat:
//     collect segment 1, describe it, send it         once global_step > learning_starts:
//     repeat:                                            update; publish every publish_every
//       collect segment k + 1 (overlaps the reply)    until global_step >= total_steps
//       wait for control k (stop, or go on with
//         the parameters it carries, if any)        learner (rank 0), its communication thread:
//       send segment k + 1                            send control 0 and the parameters
//                                                     take each actor's segment in turn, observe
//                                                     it (stream a) into the replay, answer it
//
// Actor a explores as the algorithm's Actor decides from ActingContext's actor_index a and
// num_actors A (DQN: Ape-X's eps_a = 0.4^(1 + 7 a / (A - 1))), with global_step the learner's at
// its last control plus its own steps since (never less than the step it last acted at). Where
// the replica gives the inputs of initial priorities (ActorReplica::priority_inputs: DQN with
// prioritised replay, one-step or n-step targets), the actor computes them for each segment at
// once and sends them with it, as Ape-X's actors do; otherwise new transitions take the replay's
// maximum.
// Updates run as fast as the learner can; policy.apex.max_env_steps_per_update holds back the
// answers to the actors while the steps received outrun the learner's allowance, as the threads
// wait. The run ends once the learner has observed total_steps; the segments in flight then are
// dropped, so the actors take at most one segment each beyond it.
//
// The replay takes segments while the learner updates (OffPolicyLearner::observes_while_updating,
// as on threads): rank 0's communication thread, the only user of the communicator, observes
// each segment as it arrives and answers the actor only after, so insertions never wait for an
// update and a fast actor is held back by the replay, not queued in memory; update() and the
// callbacks run on the calling thread, checkpoints between two segments. Every wait is bounded
// by policy.apex.wait_timeout_seconds (an actor's segment; under on_actor_failure = "continue" at
// most half of comm.timeout_seconds, so that the healthy actors, which wait for their control
// that long, are answered in time) or comm.timeout_seconds (the actors' waits for control). An
// actor that stalls or dies is dropped with a warning naming its rank and the others train on
// (policy.apex.on_actor_failure = "continue", the default; rank 0 tells `concord launch` the run
// survives it), or fails the run naming it ("abort"); the run fails once no actor is left.
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
  class Learning;
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
