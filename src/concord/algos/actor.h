#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include <torch/types.h>

#include "concord/algos/experience.h"

namespace concord::algos {

// Named scalars reported beside the loss curves (CleanRL's names: "losses/td_loss",
// "charts/epsilon", ...).
using Metrics = std::map<std::string, double>;

// Who is acting and when: what an Actor may need beyond the observations to choose actions
// (an exploration schedule over training, a per-actor exploration rate as in Ape-X). Policies
// fill it in; they never interpret it.
struct ActingContext {
  // The mode of the policy (argmax Q, the Gaussian's mean): evaluation without exploration.
  bool deterministic = false;
  // Environment steps taken so far (summed over every env and rank) and the run's total, for
  // schedules such as epsilon decay. global_step < 0 means "after training": schedules take
  // their final value (stochastic evaluation).
  int64_t global_step = -1;
  int64_t total_steps = 0;
  // This actor's index among num_actors actors that explore differently; 0 of 1 for policies
  // whose actors all explore alike.
  int actor_index = 0;
  int num_actors = 1;
  // An exploration rate the policy assigns this actor (Ape-X's per-actor epsilon), for algorithms
  // that have one (DQN's epsilon); < 0: the algorithm's own schedule.
  double epsilon = -1.0;
};

// What an Actor acts on: a batch of B observations and, for an actor with memory (a recurrent
// torso), the per-env state it returned for these envs last time and which envs start a new
// episode here. A feed-forward actor reads the observations only; its state is always empty, and
// a collector never builds episode_starts for it, so acting without memory costs nothing more.
struct ActorInput {
  // Implicit: `actor.act(observations, context)` is the feed-forward call.
  ActorInput(torch::Tensor observations_in) : observations(std::move(observations_in)) {}  // NOLINT
  ActorInput(torch::Tensor observations_in, TensorMap state_in, torch::Tensor episode_starts_in)
      : observations(std::move(observations_in)),
        state(std::move(state_in)),
        episode_starts(std::move(episode_starts_in)) {}

  torch::Tensor observations;  // [B, ...] in the env's dtype, on any device
  // What act() returned as `state` for these B envs, each tensor env-major ([B, ...]) so that a
  // policy can split, join and store rows of it without knowing what is inside; empty at an
  // actor's first call, which then starts every env from the actor's initial state.
  TensorMap state;
  // [B] float 0/1: 1 where observations[b] is the first of an episode, so that the actor resets
  // that env's state before acting. Undefined: no env starts one.
  torch::Tensor episode_starts;
};

// What an Actor returns for observations [B, ...]: the actions (int64 [B] for discrete action
// spaces, float [B, d] for continuous ones, unclipped), the named extras the algorithm's learner
// wants stored beside them (an actor-critic's "log_probs" and "values"), each [B], and the state
// to hand back with the envs' next observations (empty for a feed-forward actor).
struct ActorOutput {
  torch::Tensor actions;
  TensorMap extras;
  TensorMap state;
};

// The Actor fragment: pure inference, action selection for a batch of observations. Each
// algorithm provides one (a categorical or Gaussian actor-critic, an epsilon-greedy Q-network,
// SAC's tanh-Gaussian); policies call it and know nothing of what is inside: they carry the state
// it returns from one call to the next, per env, and say where episodes start (collector.h does
// this for every policy that steps envs). Observations come in the env's dtype on any device;
// results live on the network's device. The caller chooses grad mode (policies act under
// c10::InferenceMode). Concurrent calls are safe while nothing modifies the parameters;
// randomness comes from LibTorch's generator of the calling thread's context.
class Actor {
 public:
  virtual ~Actor() = default;
  virtual ActorOutput act(const ActorInput& input, const ActingContext& context) = 0;
  // What an on-policy learner bootstraps from where a rollout ends: V(o) of the actor's critic
  // for `input` (the observation after the last step, with the state the last act() returned),
  // [B]. Throws std::logic_error for an actor without a critic (the off-policy learners
  // bootstrap inside their own update).
  virtual torch::Tensor bootstrap_value(const ActorInput& input);
  // How this actor explores at `context` (DQN's "charts/epsilon"), for the policy to report with
  // the learner's metrics: only the policy knows the context each actor acts in (Ape-X's
  // per-actor epsilons). May run beside act(). None by default.
  virtual Metrics exploration(const ActingContext& /*context*/) const { return {}; }
};

}  // namespace concord::algos
