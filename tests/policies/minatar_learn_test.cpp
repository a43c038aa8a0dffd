// Pixel-class work end to end: PPO with a MinAtar game's shipped config
// (configs/ppo_minatar_<game>.toml: its [algo] tables and env.num_envs, read from the file) learns
// from uint8 grids in a short run, clearly beating a uniformly random policy measured in the same
// test, so that a config or an env change that breaks early learning fails here. Asterix and
// Seaquest are left out: a short run of 1,000,000 steps (about 80 s a seed here, twice over with
// the kernel check) is still at their bar of two points above random's 0.4 and 0.14 (Asterix 2.85
// and 2.65, Sandybridge 1.75 and 2.90, against 2.38; Seaquest 1.55 and 1.50 under its earlier 16-env setting), and a
// margin would take about 1,500,000 a seed, more than the suite's budget (bench/RESULTS.md, "MinAtar"). Also:
// `sync_vector` trains the very agent `single` does from the same seed, which is why the policy
// comparison on MinAtar reports one set of seeds for both.
#include <algorithm>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "learning_outcome.h"
#include "policies/learning_runs.h"

#include "concord/algos/algorithm_registry.h"
#include "concord/core/rng.h"
#include "concord/envs/random_actions.h"
#include "concord/envs/registry.h"
#include "concord/policies/policy_registry.h"
#include "concord/policies/runtime/evaluation.h"

namespace concord::policies {
namespace {

struct Game {
  std::string env_id;
  std::string config;  // under configs/
  int64_t train_steps;
};

void PrintTo(const Game& game, std::ostream* out) { *out << game.env_id; }

// Mean return of `episodes` episodes of a uniformly random policy.
double random_policy_return(const std::string& env_id, int episodes, uint64_t seed) {
  const auto env = envs::make_env(env_id);
  std::vector<uint8_t> observation(static_cast<size_t>(env->spec().observation_space.byte_size()));
  core::Rng rng(seed);
  double total = 0.0;
  for (int episode = 0; episode < episodes; ++episode) {
    env->reset(core::derive_seed(seed, static_cast<uint64_t>(episode)), observation.data());
    for (bool done = false; !done;) {
      envs::Action action;
      action.index = core::uniform_index(rng, env->spec().action_space.n());
      const envs::StepResult result = env->step(action, observation.data());
      total += result.reward;
      done = result.terminated || result.truncated;
    }
  }
  return total / episodes;
}

// A learner trained for `steps` from `seed` with the game's shipped settings under `policy_name`,
// its envs stepped on `env_threads` threads.
std::unique_ptr<algos::OnPolicyLearner> train(const Game& game, uint64_t seed, int64_t steps,
                                              const std::string& policy_name, int env_threads,
                                              envs::VectorEnvConfig& env) {
  torch::manual_seed(seed);
  const testing::Shipped shipped = testing::shipped(game.config);
  core::Config config = testing::config_with({});
  config.merge_toml(shipped.algo_tables, "the [algo] tables of configs/" + game.config);
  env.env_id = game.env_id;
  env.num_envs = shipped.num_envs;
  env.num_threads = env_threads;
  env.seed = seed;
  const envs::EnvSpec spec = envs::make_env(game.env_id)->spec();
  std::unique_ptr<algos::OnPolicyLearner> learner =
      algos::as_on_policy(algos::make_learner(shipped.algo, config, spec.observation_space, spec.action_space));
  std::unique_ptr<Policy> policy = make_policy(policy_name, PolicyContext{config, env, *learner, torch::kCPU});
  TrainingState state;
  policy->train(state, steps, /*checkpoint_interval_steps=*/int64_t{1} << 40, TrainingCallbacks{});
  EXPECT_GE(state.global_step, steps);
  return learner;
}

// The mean return of 20 evaluation episodes (sampled actions, as the policy was trained) after a
// short training run from `seed` with the game's shipped settings.
double train_and_evaluate(const Game& game, uint64_t seed) {
  envs::VectorEnvConfig env;
  const std::unique_ptr<algos::OnPolicyLearner> learner = train(game, seed, game.train_steps, "single", 1, env);

  envs::VectorEnvConfig eval_env = env;
  eval_env.seed = seed + runtime::kEvalSeedOffset;
  const std::vector<double> returns = runtime::evaluate_episodes(*learner, eval_env, 20, /*stochastic=*/true);
  return std::accumulate(returns.begin(), returns.end(), 0.0) / static_cast<double>(returns.size());
}

class MinAtarLearning : public ::testing::TestWithParam<Game> {};

TEST_P(MinAtarLearning, PpoWithTheShippedConfigBeatsARandomPolicy) {
  const Game& game = GetParam();
  const double random_return = random_policy_return(game.env_id, 200, 5);
  // The bar: three times the random policy's return, and at least two points above it.
  const double bar = std::max(3.0 * random_return, random_return + 2.0);
  std::printf("[learning] %s random policy return %.2f over 200 episodes; bar %.2f\n", game.env_id.c_str(),
              random_return, bar);
  EXPECT_TRUE(test::learns([&](uint64_t seed) { return train_and_evaluate(game, seed); }, test::LearningBar{bar}));
}

// sync_vector is `single` with its envs stepped on threads; each env keeps its own random stream,
// so from one seed both policies see the same transitions and make the same updates, to the bit.
// Two updates of Breakout's shipped setting (64 envs x 128 steps), on 1 and on 2 env threads.
TEST(MinAtarPolicies, SyncVectorTrainsTheSameAgentAsSingle) {
  const Game breakout{"MinAtar/Breakout-v1", "ppo_minatar_breakout.toml", 2 * 64 * 128};
  envs::VectorEnvConfig single_env;
  envs::VectorEnvConfig threaded_env;
  const auto single = train(breakout, 7, breakout.train_steps, "single", 1, single_env);
  const auto threaded = train(breakout, 7, breakout.train_steps, "sync_vector", 2, threaded_env);
  EXPECT_TRUE(torch::equal(threaded->flat_parameters().values(), single->flat_parameters().values()));
}

INSTANTIATE_TEST_SUITE_P(Games, MinAtarLearning,
                         ::testing::Values(Game{"MinAtar/Breakout-v1", "ppo_minatar_breakout.toml", 200'000},
                                           Game{"MinAtar/Freeway-v1", "ppo_minatar_freeway.toml", 100'000},
                                           Game{"MinAtar/SpaceInvaders-v1", "ppo_minatar_space_invaders.toml",
                                                250'000}),
                         [](const ::testing::TestParamInfo<Game>& info) {
                           std::string name = info.param.env_id.substr(info.param.env_id.find('/') + 1);
                           name.erase(std::remove(name.begin(), name.end(), '-'), name.end());
                           return name;
                         });

}  // namespace
}  // namespace concord::policies
