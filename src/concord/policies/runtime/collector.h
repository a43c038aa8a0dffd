#pragma once

#include <cstdint>
#include <functional>

#include <torch/types.h>

#include "concord/algos/actor.h"
#include "concord/envs/vector_env.h"
#include "concord/policies/runtime/env_actions.h"
#include "concord/policies/runtime/experience_sink.h"

namespace concord::policies::runtime {

// The one acting loop of every policy that steps envs, whatever the algorithm's family: an
// algos::Actor acts on the envs' current observations, the envs step, and the step goes to an
// ExperienceSink, which lays it out as its learner wants (a rollout, a transition).
//
//   out = actor.act({o_t, state, episode_starts}, context);  state = out.state
//   o_{t+1}, r_t, term_t, trunc_t = envs.step(out.actions);   sink.record({o_t, out, batch})
//   episode_starts = term_t | trunc_t                          (the envs auto-reset in the step)
//
// The actor's state (empty for a feed-forward actor) lives here, one row per env, from one step
// to the next and from one rollout to the next; where an episode ends, the next observation
// starts a new one and the actor resets that env's row. A feed-forward actor's state stays
// empty and no episode_starts are built for it, so the loop costs it nothing. Continuous actions
// are clipped to the action space's bounds at the environment boundary (EnvActions); the sink
// sees what the actor chose. Acting runs under InferenceMode. Not thread-safe; one collector per
// thread.
class Collector {
 public:
  using EpisodeCallback = std::function<void(double episode_return, int64_t episode_length)>;

  // Resets the envs: their first observations are o_0, each the first of an episode. Throws
  // std::invalid_argument if the env is asynchronous.
  Collector(envs::BatchedEnvs& env, torch::Device device);

  // One step of every env with `actor` choosing; on_episode is called for every episode that ends.
  void step(algos::Actor& actor, const algos::ActingContext& context, ExperienceSink& sink,
            const EpisodeCallback& on_episode);

  // What the actor would act on now: o_t on `device`, with the state and episode starts it
  // carries (a rollout's bootstrap value is computed from it).
  algos::ActorInput input() const;
  // o_t on the host [B, *obs_shape], in the env's dtype.
  const torch::Tensor& observations() const { return observations_; }
  // The actor's state for the current observations, env-major; empty for a feed-forward actor.
  const algos::TensorMap& state() const { return state_; }

  int64_t num_envs() const { return num_envs_; }
  envs::BatchedEnvs& env() { return env_; }
  torch::Device device() const { return device_; }

 private:
  envs::BatchedEnvs& env_;
  torch::Device device_;
  int64_t num_envs_;
  EnvActions env_actions_;
  torch::Tensor observations_;    // o_t on the host, [B, *obs_shape] in the env's dtype
  algos::TensorMap state_;        // what the actor returned for o_t; empty until it returns one
  torch::Tensor episode_starts_;  // [B] float on the host: 1 where o_t starts an episode
};

}  // namespace concord::policies::runtime
