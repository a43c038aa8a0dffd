#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include <torch/types.h>

#include "concord/algos/rollout.h"
#include "concord/envs/vector_env.h"
#include "concord/nn/actor_critic.h"
#include "concord/policies/env_actions.h"
#include "concord/policies/runtime/acting_source.h"

namespace concord::policies {

// Collects on-policy rollouts of T steps from a synchronous VectorEnv with an actor-critic acting
// in line or elsewhere (runtime::ActingSource): the collection half of every on-policy loop.
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
class RolloutCollector {
 public:
  using EpisodeCallback = std::function<void(double episode_return, int64_t episode_length)>;

  // Resets the envs (their first observations start the first rollout). Throws
  // std::invalid_argument if the env is asynchronous.
  RolloutCollector(envs::BatchedEnvs& env, int64_t steps_per_rollout, torch::Device device);

  // Steps every env T times with `source` choosing actions (under InferenceMode) and returns the
  // rollout; on_episode is called for every episode that ends.
  const algos::Rollout& collect(runtime::ActingSource& source, const EpisodeCallback& on_episode);
  // The same with `model` acting in line.
  const algos::Rollout& collect(nn::ActorCritic& model, const EpisodeCallback& on_episode) {
    runtime::InlineActing in_line(model);
    return collect(in_line, on_episode);
  }

  int64_t steps_per_rollout() const { return steps_; }
  // Environment steps one collect() takes: T x num_envs.
  int64_t env_steps_per_rollout() const { return steps_ * env_.num_envs(); }
  envs::BatchedEnvs& env() { return env_; }

 private:
  envs::BatchedEnvs& env_;
  int64_t steps_;
  torch::Device device_;
  int64_t num_envs_;
  bool discrete_;
  EnvActions env_actions_;

  // Host buffers written by memcpy; observations have T + 1 rows (row T is o_T).
  torch::Tensor host_observations_, host_final_observations_, host_rewards_, host_terminated_, host_truncated_;
  std::vector<torch::Tensor> observation_rows_, action_rows_, log_prob_rows_, value_rows_;
  algos::Rollout rollout_;
};

}  // namespace concord::policies
