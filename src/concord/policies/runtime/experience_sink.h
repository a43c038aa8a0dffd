#pragma once

#include <torch/types.h>

#include "concord/algos/actor.h"
#include "concord/envs/vector_env.h"

namespace concord::policies::runtime {

// One step of B envs as the Collector saw it, handed to an ExperienceSink: what the actor chose
// at o_t and what the envs returned. Everything is valid only during ExperienceSink::record():
// the engine's buffers are overwritten by the next step, so a sink copies what it keeps.
struct CollectedStep {
  const torch::Tensor& observations;  // o_t [B, *obs_shape] on the host, in the env's dtype
  // The state the actor acted from at o_t (before its resets where episodes start; empty at its
  // first call, and always for a feed-forward actor), env-major on the acting device.
  const algos::TensorMap& state;
  const algos::ActorOutput& acted;  // the actor's output at o_t (on the acting device)
  const envs::Batch& batch;         // o_{t+1}, r_t, terminated_t, truncated_t, final observations
  // [B] float on the host, 1 where o_t is the first of an episode; kept only for an actor with
  // memory (acted.state not empty).
  const torch::Tensor& episode_starts;
};

// Where a Collector writes what it gathers: a rollout of T steps for an on-policy learner
// (RolloutCollector), one transition per step for an off-policy one (TransitionCollector), the
// episodes of an evaluation. The experience's layout is the sink's; acting is the Collector's.
class ExperienceSink {
 public:
  virtual ~ExperienceSink() = default;
  virtual void record(const CollectedStep& step) = 0;
};

}  // namespace concord::policies::runtime
