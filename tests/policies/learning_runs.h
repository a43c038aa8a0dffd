#pragma once
// What the policies' learning tests share: a config from --set assignments, the fast off-policy
// settings whose bars every policy's DQN and SAC tests use, and one training run on the calling
// thread scored by its deterministic evaluation.
#include <cstdint>
#include <memory>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <toml++/toml.h>
#include <torch/torch.h>

#include "concord/algos/algorithm_registry.h"
#include "concord/core/config.h"
#include "concord/core/rng.h"
#include "concord/envs/registry.h"
#include "concord/policies/policy_registry.h"
#include "concord/policies/runtime/evaluation.h"
#include "concord/sync/sync_registry.h"

namespace concord::policies::testing {

// A shipped config (configs/<file>), read from the file so that the tests follow it: its [algo]
// tables (as TOML, for Config::merge_toml), train.algo, env.num_envs and train.total_timesteps.
struct Shipped {
  std::string file;         // under configs/
  std::string algo;         // train.algo
  std::string algo_tables;  // the file's [algo] tables, as TOML
  int num_envs = 0;
  int64_t total_timesteps = 0;
};

inline Shipped shipped(const std::string& name) {
  const std::string path = std::string(CONCORD_SOURCE_DIR) + "/configs/" + name;
  const toml::table file = toml::parse_file(path);
  toml::table algo_only;
  algo_only.insert("algo", *file["algo"].as_table());
  std::ostringstream text;
  text << algo_only;
  return {name, file["train"]["algo"].value<std::string>().value(), text.str(),
          static_cast<int>(file["env"]["num_envs"].value<int64_t>().value()),
          file["train"]["total_timesteps"].value<int64_t>().value()};
}

// Every algorithm, policy and sync key at its default, then `overrides` ("key=value").
inline core::Config config_with(const std::vector<std::string>& overrides) {
  core::ConfigSchema schema;
  algos::declare_algorithm_keys(schema);
  declare_policy_keys(schema);
  sync::declare_sync_keys(schema);
  schema.declare("run.seed", int64_t{1}, "gossip draws its exchange pattern from it");
  core::Config config(schema);
  for (const std::string& assignment : overrides) config.apply_override(assignment);
  return config;
}

// DQN that learns CartPole in 30k steps: CleanRL's network and schedule shapes, but a gradient
// step every env step from 1,000 on, and a faster rate and target period. Bar: 80 (random ~22).
inline const std::vector<std::string> kFastDqn = {"algo.hidden_sizes=[64, 64]",
                                                  "algo.activation=relu",
                                                  "algo.dqn.learning_starts=1000",
                                                  "algo.dqn.train_frequency=1",
                                                  "algo.dqn.batch_size=64",
                                                  "algo.dqn.learning_rate=1e-3",
                                                  "algo.dqn.target_network_frequency=250",
                                                  "algo.dqn.exploration_fraction=0.3"};
inline constexpr int64_t kFastDqnSteps = 30'000;

// SAC with RL Zoo's Pendulum rate, on smaller networks and batches, for 6k steps. Bar: -700
// (random about -1,200).
inline const std::vector<std::string> kFastSac = {
    "algo.hidden_sizes=[64, 64]", "algo.activation=relu", "algo.sac.learning_starts=500", "algo.sac.batch_size=64",
    "algo.sac.policy_lr=1e-3",    "algo.sac.q_lr=1e-3",   "algo.sac.policy_frequency=1"};
inline constexpr int64_t kFastSacSteps = 6'000;

// Mean return of `episodes` episodes of actions uniform over the action space of `id`.
inline double random_box_return(const std::string& id, int episodes, uint64_t seed) {
  const auto env = envs::make_env(id);
  const envs::Space& space = env->spec().action_space;
  std::vector<float> observation(env->spec().observation_space.flat_size());
  std::vector<float> action(space.flat_size());
  core::Rng rng(seed);
  double total = 0.0;
  for (int episode = 0; episode < episodes; ++episode) {
    env->reset(core::derive_seed(seed, static_cast<uint64_t>(episode)), observation.data());
    for (bool done = false; !done;) {
      for (size_t i = 0; i < action.size(); ++i) {
        action[i] = static_cast<float>(core::uniform(rng, space.low()[i], space.high()[i]));
      }
      envs::Action a;
      a.values = action.data();
      const envs::StepResult result = env->step(a, observation.data());
      total += result.reward;
      done = result.terminated || result.truncated;
    }
  }
  return total / episodes;
}

inline std::unique_ptr<algos::Learner> learner_for(const std::string& algo, const core::Config& config,
                                                   const envs::VectorEnvConfig& env) {
  const envs::EnvSpec spec = envs::make_env(env.env_id, env.options)->spec();
  return algos::make_learner(algo, config, spec.observation_space, spec.action_space);
}

// The mean deterministic return of `learner` over 10 episodes of `env` reseeded 99 + seed.
inline double evaluate(algos::Learner& learner, envs::VectorEnvConfig env, uint64_t seed) {
  env.seed = 99 + seed;
  const std::vector<double> returns = runtime::evaluate_episodes(learner, env, 10);
  return std::accumulate(returns.begin(), returns.end(), 0.0) / static_cast<double>(returns.size());
}

// Trains `algo` under `policy` on `env` (seeded `seed`, as LibTorch is) for `steps` env steps,
// checks the run took them and updated, and returns evaluate().
inline double train_and_evaluate(const std::string& policy, const std::string& algo, const core::Config& config,
                                 envs::VectorEnvConfig env, int64_t steps, uint64_t seed) {
  torch::manual_seed(seed);
  env.seed = seed;
  std::unique_ptr<algos::Learner> learner = learner_for(algo, config, env);
  TrainingState state;
  make_policy(policy, PolicyContext{config, env, *learner, torch::kCPU})->train(state, steps, int64_t{1} << 40, {});
  EXPECT_GE(state.global_step, steps) << policy << " / " << algo;
  EXPECT_GT(state.updates, 0) << policy << " / " << algo;
  return evaluate(*learner, env, seed);
}

}  // namespace concord::policies::testing
