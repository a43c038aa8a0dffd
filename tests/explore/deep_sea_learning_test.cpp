// The bonus makes the difference on a small DeepSea: PPO with the SimHash count bonus learns to
// reach the treasure of DeepSea(10) within a fixed budget, the same agent without it does not.
// The same under hogwild, whose worker threads share one count table.
#include <memory>
#include <string>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "concord/algos/algorithm_registry.h"
#include "concord/envs/exploration/deep_sea.h"
#include "concord/explore/bonus_registry.h"
#include "concord/policies/policy_registry.h"
#include "concord/policies/runtime/evaluation.h"
#include "learning_outcome.h"

namespace concord::explore {
namespace {

constexpr int kSize = 10;

core::Config deep_sea_config(const std::string& bonus, const std::string& policy) {
  core::ConfigSchema schema;
  schema.declare("run.seed", int64_t{1}, "seed");
  algos::declare_algorithm_keys(schema);
  policies::declare_policy_keys(schema);
  declare_explore_keys(schema);
  core::Config config(schema);
  for (const char* assignment : {"algo.ppo.num_steps=32", "algo.ppo.anneal_lr=false", "algo.ppo.learning_rate=1e-3",
                                 "algo.ppo.ent_coef=0.0", "explore.beta=0.1", "explore.sketch.table_size=10007"}) {
    config.apply_override(assignment);
  }
  if (policy == "hogwild") {
    for (const char* assignment : {"algo.ppo.update_epochs=1", "algo.ppo.num_minibatches=1"}) {
      config.apply_override(assignment);
    }
  }
  config.set("explore.bonus", bonus, "test");
  return config;
}

// Trains for `steps` and returns the greedy policy's return on DeepSea(10) (0.99 at the treasure).
double train_and_evaluate(const std::string& bonus_name, const std::string& policy_name, int64_t steps,
                          uint64_t seed = 1) {
  torch::manual_seed(seed);
  core::Config config = deep_sea_config(bonus_name, policy_name);
  config.set("run.seed", static_cast<int64_t>(seed), "test");
  const envs::EnvSpec spec = envs::DeepSea::make_spec(kSize);
  envs::VectorEnvConfig env;
  env.env_id = spec.id;
  env.num_envs = policy_name == "hogwild" ? 8 : 16;  // hogwild: 8 for each of its 2 workers
  env.seed = seed;
  std::unique_ptr<algos::OnPolicyLearner> learner =
      algos::as_on_policy(algos::make_learner("ppo", config, spec.observation_space, spec.action_space));
  std::unique_ptr<Bonus> bonus = make_bonus(config, spec.observation_space);
  std::unique_ptr<policies::Policy> policy = policies::make_policy(
      policy_name, policies::PolicyContext{config, env, *learner, torch::kCPU, nullptr, bonus.get()});
  policies::TrainingState state;
  policy->train(state, steps, /*checkpoint_interval_steps=*/int64_t{1} << 40, policies::TrainingCallbacks{});
  env.seed = 999 + seed;
  return policies::runtime::evaluate_episodes(*learner, env, /*episodes=*/1).front();
}

TEST(DeepSeaLearning, TheBonusFindsTheTreasureThePlainAgentMisses) {
  EXPECT_TRUE(test::learns([](uint64_t seed) { return train_and_evaluate("simhash", "single", 60000, seed); },
                           test::LearningBar{0.9}));
  // Without the bonus the agent learns to go left, where no step costs anything, and never
  // reaches the treasure (0.99).
  EXPECT_LE(train_and_evaluate("none", "single", 60000), 0.0);
}

TEST(DeepSeaLearning, HogwildWorkersSharingOneCountTableFindItToo) {
  EXPECT_TRUE(test::learns([](uint64_t seed) { return train_and_evaluate("simhash", "hogwild", 60000, seed); },
                           test::LearningBar{0.9}));
}

// async_learner adds the bonus on the learner's thread, to rollouts acted one update late.
TEST(DeepSeaLearning, AsyncLearnerAddsTheBonusAndFindsItToo) {
  EXPECT_TRUE(test::learns([](uint64_t seed) { return train_and_evaluate("simhash", "async_learner", 60000, seed); },
                           test::LearningBar{0.9}));
}

}  // namespace
}  // namespace concord::explore
