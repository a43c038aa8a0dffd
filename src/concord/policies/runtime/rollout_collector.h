#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include <torch/types.h>

#include "concord/algos/actor.h"
#include "concord/algos/actor_critic_actor.h"
#include "concord/algos/rollout.h"
#include "concord/envs/vector_env.h"
#include "concord/nn/actor_critic.h"
#include "concord/policies/runtime/collector.h"
#include "concord/policies/runtime/experience_sink.h"

namespace concord::policies::runtime {

// Collects on-policy rollouts of T steps: the runtime::Collector's acting loop, T steps at a
// time, into a Rollout (the sink this class is). The actor is an actor-critic's (its extras
// "log_probs" and "values", and its bootstrap value), acting in line, as a replica, or as a
// batched inference service's client on other threads (runtime::BatchedInference).
//
//   for t < T: a_t ~ pi(o_t); o_{t+1}, r_t, term_t, trunc_t = envs.step(a_t)
//              final_observations_t = the ended episode's last o where truncated
//   bootstrap = V(o_T); o_T starts the next rollout
//
// Continuous actions are clipped to the action space's bounds at the environment boundary
// (what Gymnasium's ClipAction wrapper does); the rollout stores the unclipped sample. What the
// envs produce is written into preallocated host buffers with memcpy, so a step costs no tensor
// operation besides the actor's; what the actor produces lives on `device`. The returned Rollout
// views these buffers: it is valid until the next collect(). Not thread-safe; one collector per
// thread.
class RolloutCollector final : private runtime::ExperienceSink {
 public:
  using EpisodeCallback = runtime::Collector::EpisodeCallback;

  // Resets the envs (their first observations start the first rollout). Throws
  // std::invalid_argument if the env is asynchronous.
  RolloutCollector(envs::BatchedEnvs& env, int64_t steps_per_rollout, torch::Device device);

  // Steps every env T times with `actor` choosing actions and returns the rollout; on_episode is
  // called for every episode that ends.
  const algos::Rollout& collect(algos::Actor& actor, const EpisodeCallback& on_episode);
  // The same with `model` acting in line.
  const algos::Rollout& collect(nn::ActorCritic& model, const EpisodeCallback& on_episode) {
    algos::ActorCriticActor in_line(model);
    return collect(in_line, on_episode);
  }

  int64_t steps_per_rollout() const { return steps_; }
  // Environment steps one collect() takes: T x num_envs.
  int64_t env_steps_per_rollout() const { return steps_ * num_envs_; }
  envs::BatchedEnvs& env() { return collector_.env(); }

 private:
  void record(const runtime::CollectedStep& step) override;

  runtime::Collector collector_;
  int64_t steps_;
  torch::Device device_;
  int64_t num_envs_;
  int64_t obs_bytes_;
  int64_t t_ = 0;  // the row record() writes

  // Host buffers written by memcpy; observations have T + 1 rows (row T is o_T).
  torch::Tensor host_observations_, host_final_observations_, host_rewards_, host_terminated_, host_truncated_;
  torch::Tensor host_episode_starts_;  // [T, B], written for an actor with memory only
  std::vector<torch::Tensor> observation_rows_, action_rows_, log_prob_rows_, value_rows_;
  algos::Rollout rollout_;
};

}  // namespace concord::policies::runtime
