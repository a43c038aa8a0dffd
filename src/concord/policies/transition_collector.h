#pragma once

#include <cstdint>
#include <functional>

#include <torch/types.h>

#include "concord/algos/actor.h"
#include "concord/algos/experience.h"
#include "concord/envs/vector_env.h"
#include "concord/policies/env_actions.h"

namespace concord::policies {

// Collects experience one step of every environment at a time, for off-policy algorithms: the
// collection half of the off-policy loops of `single`, `sync_vector` and `multi_learner`.
//
//   out = actor.act(o_t, context);  o_{t+1}, r_t, term_t, trunc_t = envs.step(out.actions)
//   returns {o_t, a_t, r_t, term_t, trunc_t, next o}   (algos/experience.h, `transition` names)
//
// where "next o" is the final observation of the episode wherever step t ended one (the envs
// have already auto-reset, so o_{t+1} there starts the next episode). Continuous actions are
// clipped to the action space's bounds at the environment boundary; the transition keeps what
// the actor chose. The returned tensors are fresh each step (the learner may keep them); all
// live on `device`. Not thread-safe; one collector per thread.
class TransitionCollector {
 public:
  using EpisodeCallback = std::function<void(double episode_return, int64_t episode_length)>;

  // Resets the envs (their first observations are o_0). Throws std::invalid_argument if the env
  // is asynchronous.
  TransitionCollector(envs::BatchedEnvs& env, torch::Device device);

  // One step of every env with `actor` choosing (under InferenceMode); on_episode is called for
  // every episode that ends.
  algos::TensorMap step(algos::Actor& actor, const algos::ActingContext& context, const EpisodeCallback& on_episode);

  int64_t num_envs() const { return num_envs_; }
  envs::BatchedEnvs& env() { return env_; }

 private:
  envs::BatchedEnvs& env_;
  torch::Device device_;
  int64_t num_envs_;
  EnvActions env_actions_;
  torch::Tensor observations_;  // o_t on the host, [B, *obs_shape] in the env's dtype
};

}  // namespace concord::policies
