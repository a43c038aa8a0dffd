#pragma once

#include <cstdint>
#include <vector>

#include "concord/algos/learner.h"
#include "concord/envs/registry.h"
#include "concord/envs/vector_env.h"
#include "concord/nn/actor_critic.h"

namespace concord::policies::runtime {

// Evaluation environments are seeded run.seed + kEvalSeedOffset, so that they never replay the
// training environments' episodes (`concord eval` and bench/learning both use it).
inline constexpr int64_t kEvalSeedOffset = 1000;

// Evaluation truncates the episodes of an env that has no time limit (neither its own nor
// env.max_episode_steps) after this many steps: ALE's cap of 108,000 frames, one MinAtar step
// being one frame. Without it a policy that never ends an episode stalls an evaluation for good:
// MinAtar's Seaquest submarine parked at the surface uses no oxygen and meets no enemy.
inline constexpr int kEvaluationStepLimit = 108'000;

// One evaluation: each episode's return, in environment order, and how many episodes the
// evaluation's own step limit cut short (0 where the env has a time limit of its own).
struct Evaluation {
  std::vector<double> returns;
  int64_t cut_at_limit = 0;
  int step_limit = 0;  // the limit evaluation imposed; 0 where the env's own applied
};

// Runs the learner's Actor for one episode in each of `episodes` fresh environments, stepped together
// synchronously (env_config's num_envs and batch_size are overridden; its seed, id and threads
// are used), and returns each episode's return, in environment order. Running one episode per
// environment, rather than the first K to finish, keeps short episodes from being over-counted.
//
// Actions are the Actor's deterministic ones (the policy's mode, argmax Q), or what it does after
// training when `stochastic` (a sample; DQN's final epsilon), from LibTorch's global generator;
// continuous actions are clipped to the action space's bounds, as in training. Observations go
// to the model raw: a model that normalises them does so with its own saved statistics. Grad
// mode is off inside. An env without a time limit is truncated at `step_limit` steps (>= 1).
// Throws what VectorEnv's constructor throws.
Evaluation evaluate(algos::Learner& learner, envs::VectorEnvConfig env_config, int64_t episodes,
                    bool stochastic = false, int step_limit = kEvaluationStepLimit,
                    const envs::Registry& registry = envs::Registry::global());
// evaluate(...).returns, at the default step limit.
std::vector<double> evaluate_episodes(algos::Learner& learner, envs::VectorEnvConfig env_config, int64_t episodes,
                                      bool stochastic = false,
                                      const envs::Registry& registry = envs::Registry::global());
// The same for an actor-critic model of its own.
Evaluation evaluate(nn::ActorCritic model, envs::VectorEnvConfig env_config, int64_t episodes, bool stochastic = false,
                    int step_limit = kEvaluationStepLimit, const envs::Registry& registry = envs::Registry::global());
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

}  // namespace concord::policies::runtime
