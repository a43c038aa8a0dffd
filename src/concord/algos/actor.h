#pragma once

#include <cstdint>
#include <map>
#include <string>

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

// What an Actor returns for observations [B, ...]: the actions (int64 [B] for discrete action
// spaces, float [B, d] for continuous ones, unclipped) and the named extras the algorithm's
// learner wants stored beside them (an actor-critic's "log_probs" and "values"), each [B].
struct ActorOutput {
  torch::Tensor actions;
  TensorMap extras;
};

// The Actor fragment: pure inference, action selection for a batch of observations. Each
// algorithm provides one (a categorical or Gaussian actor-critic, an epsilon-greedy Q-network,
// SAC's tanh-Gaussian); policies call it and know nothing of what is inside. Observations come
// in the env's dtype on any device; results live on the network's device. The caller chooses
// grad mode (policies act under c10::InferenceMode). Concurrent calls are safe while nothing
// modifies the parameters; randomness comes from LibTorch's generator of the calling thread's
// context.
class Actor {
 public:
  virtual ~Actor() = default;
  virtual ActorOutput act(const torch::Tensor& observations, const ActingContext& context) = 0;
  // How this actor explores at `context` (DQN's "charts/epsilon"), for the policy to report with
  // the learner's metrics: only the policy knows the context each actor acts in (Ape-X's
  // per-actor epsilons). May run beside act(). None by default.
  virtual Metrics exploration(const ActingContext& /*context*/) const { return {}; }
};

}  // namespace concord::algos
