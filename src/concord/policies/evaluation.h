#pragma once

#include <cstdint>
#include <vector>

#include "concord/algos/learner.h"
#include "concord/envs/registry.h"
#include "concord/envs/vector_env.h"
#include "concord/nn/actor_critic.h"

namespace concord::policies {

// Evaluation environments are seeded run.seed + kEvalSeedOffset, so that they never replay the
// training environments' episodes (`concord eval` and bench/learning both use it).
inline constexpr int64_t kEvalSeedOffset = 1000;

// Runs the learner's Actor for one episode in each of `episodes` fresh environments, stepped together
// synchronously (env_config's num_envs and batch_size are overridden; its seed, id and threads
// are used), and returns each episode's return, in environment order. Running one episode per
// environment, rather than the first K to finish, keeps short episodes from being over-counted.
//
// Actions are the Actor's deterministic ones (the policy's mode, argmax Q), or what it does after
// training when `stochastic` (a sample; DQN's final epsilon), from LibTorch's global generator;
// continuous actions are clipped to the action space's bounds, as in training. Observations go
// to the model raw: a model that normalises them does so with its own saved statistics. Grad
// mode is off inside. Throws what VectorEnv's constructor throws.
std::vector<double> evaluate_episodes(algos::Learner& learner, envs::VectorEnvConfig env_config, int64_t episodes,
                                      bool stochastic = false,
                                      const envs::Registry& registry = envs::Registry::global());
// The same for an actor-critic model of its own.
std::vector<double> evaluate_episodes(nn::ActorCritic model, envs::VectorEnvConfig env_config, int64_t episodes,
                                      bool stochastic = false,
                                      const envs::Registry& registry = envs::Registry::global());

// Mean and population standard deviation of a list of returns (0 and 0 for an empty list).
struct ReturnSummary {
  double mean = 0.0;
  double std = 0.0;
  int64_t count = 0;
};
ReturnSummary summarize_returns(const std::vector<double>& returns);

}  // namespace concord::policies
