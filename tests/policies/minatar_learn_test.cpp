// Pixel-class work end to end: PPO with MinAtar's reference network (grid_cnn) learns MinAtar
// Breakout from uint8 observations in seconds, clearly beating a uniformly random policy measured
// in the same test.
#include <algorithm>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "learning_outcome.h"

#include "concord/algos/algorithm_registry.h"
#include "concord/core/rng.h"
#include "concord/envs/random_actions.h"
#include "concord/envs/registry.h"
#include "concord/policies/evaluation.h"
#include "concord/policies/policy_registry.h"

namespace concord::policies {
namespace {

constexpr const char* kBreakout = "MinAtar/Breakout-v1";
constexpr int64_t kTrainSteps = 150'000;

core::Config breakout_config() {
  core::ConfigSchema schema;
  algos::declare_algorithm_keys(schema);
  declare_policy_keys(schema);
  core::Config config(schema);
  for (const char* assignment :
       {"algo.torso=grid_cnn", "algo.shared_torso=true", "algo.ppo.num_steps=64", "algo.ppo.num_minibatches=4",
        "algo.ppo.update_epochs=4", "algo.ppo.learning_rate=1e-3", "algo.ppo.gamma=0.99", "algo.ppo.gae_lambda=0.95",
        "algo.ppo.ent_coef=0.01", "algo.ppo.anneal_lr=false"}) {
    config.apply_override(assignment);
  }
  return config;
}

envs::VectorEnvConfig breakout_envs(uint64_t seed) {
  envs::VectorEnvConfig env;
  env.env_id = kBreakout;
  env.num_envs = 16;
  env.seed = seed;
  return env;
}

// Mean return of `episodes` episodes of a uniformly random policy.
double random_policy_return(int episodes, uint64_t seed) {
  const auto env = envs::make_env(kBreakout);
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

// The mean return of 20 evaluation episodes (sampled actions, as the policy was trained) after a
// short training run from `seed`.
double train_and_evaluate(uint64_t seed, int64_t steps) {
  torch::manual_seed(seed);
  core::Config config = breakout_config();
  const envs::VectorEnvConfig env = breakout_envs(seed);
  const envs::EnvSpec spec = envs::make_env(kBreakout)->spec();
  std::unique_ptr<algos::OnPolicyLearner> learner =
      algos::as_on_policy(algos::make_learner("ppo", config, spec.observation_space, spec.action_space));
  std::unique_ptr<Policy> policy = make_policy("single", PolicyContext{config, env, *learner, torch::kCPU});
  TrainingState state;
  policy->train(state, steps, /*checkpoint_interval_steps=*/int64_t{1} << 40, TrainingCallbacks{});
  EXPECT_GE(state.global_step, steps);

  envs::VectorEnvConfig eval_env = env;
  eval_env.seed = seed + kEvalSeedOffset;
  const std::vector<double> returns = evaluate_episodes(*learner, eval_env, 20, /*stochastic=*/true);
  return std::accumulate(returns.begin(), returns.end(), 0.0) / static_cast<double>(returns.size());
}

TEST(MinAtarLearning, PpoWithTheGridCnnBeatsARandomPolicyOnBreakout) {
  const double random_return = random_policy_return(200, 5);
  // The bar: three times the random policy's return, and at least two points above it.
  const double bar = std::max(3.0 * random_return, random_return + 2.0);
  std::printf("[learning] MinAtar Breakout random policy return %.2f over 200 episodes; bar %.2f\n", random_return,
              bar);
  EXPECT_TRUE(
      test::learns([](uint64_t seed) { return train_and_evaluate(seed, kTrainSteps); }, test::LearningBar{bar}));
}

}  // namespace
}  // namespace concord::policies
