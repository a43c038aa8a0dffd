#include "concord/algos/algorithm_registry.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "concord/algos/a2c.h"
#include "concord/algos/ppo.h"

namespace concord::algos {
namespace {

core::Config algorithm_config() {
  core::ConfigSchema schema;
  declare_algorithm_keys(schema);
  return core::Config(std::move(schema));
}

const envs::Space kCartPoleObs = envs::Space::box({4}, -1.0f, 1.0f);
const envs::Space kTwoActions = envs::Space::discrete(2);

TEST(AlgorithmRegistryTest, DeclaresKeysWithTheConfigStructDefaults) {
  core::ConfigSchema schema;
  declare_algorithm_keys(schema);
  const core::Config config(schema);
  EXPECT_EQ(config.get_int_list("algo.hidden_sizes"), (std::vector<int64_t>{64, 64}));
  EXPECT_EQ(config.get_string("algo.activation"), "tanh");
  EXPECT_DOUBLE_EQ(config.get_double("algo.ppo.learning_rate"), 2.5e-4);
  EXPECT_EQ(config.get_int("algo.ppo.num_steps"), 128);
  EXPECT_EQ(config.get_int("algo.ppo.num_minibatches"), 4);
  EXPECT_TRUE(config.get_bool("algo.ppo.clip_vloss"));
  EXPECT_DOUBLE_EQ(config.get_double("algo.ppo.target_kl"), 0.0);
  EXPECT_DOUBLE_EQ(config.get_double("algo.a2c.learning_rate"), 7e-4);
  EXPECT_EQ(config.get_int("algo.a2c.num_steps"), 5);
  EXPECT_EQ(config.get_string("algo.a2c.optimizer"), "rmsprop");
  EXPECT_DOUBLE_EQ(config.get_double("algo.a2c.gae_lambda"), 1.0);
  EXPECT_DOUBLE_EQ(config.get_double("algo.init_log_std"), 0.0);
  EXPECT_FALSE(config.get_bool("algo.normalize_observations"));
  EXPECT_FALSE(config.get_bool("algo.ppo.normalize_reward"));
  EXPECT_FALSE(config.get_bool("algo.a2c.normalize_reward"));

  // Every algorithm key has a doc; no key outside algo.
  for (const auto& [key, entry] : schema.entries()) {
    EXPECT_EQ(key.rfind("algo.", 0), 0u) << key;
    EXPECT_FALSE(entry.doc.empty()) << key;
  }
  EXPECT_EQ(algorithm_names(), (std::vector<std::string>{"a2c", "dqn", "ppo", "sac"}));
  EXPECT_THROW(declare_algorithm_keys(schema), std::logic_error);
}

TEST(AlgorithmRegistryTest, RolloutStepsAreAnOnPolicyAlgorithmsNumSteps) {
  core::Config config = algorithm_config();
  config.apply_override("algo.ppo.num_steps=64");
  EXPECT_EQ(rollout_steps("ppo", config), 64);
  EXPECT_EQ(rollout_steps("a2c", config), 5);
  EXPECT_EQ(rollout_steps("dqn", config), 0);
  EXPECT_EQ(rollout_steps("sac", config), 0);
  EXPECT_THROW(rollout_steps("r2d2", config), std::invalid_argument);
}

TEST(AlgorithmRegistryTest, BuildsPpoFromConfigAndSpaces) {
  core::Config config = algorithm_config();
  config.apply_override("algo.ppo.num_steps=64");
  config.apply_override("algo.ppo.target_kl=0.02");
  config.apply_override("algo.ppo.clip_vloss=false");
  config.apply_override("algo.hidden_sizes=[32]");
  config.apply_override("algo.activation=relu");
  const std::unique_ptr<OnPolicyLearner> learner = as_on_policy(make_learner("ppo", config, kCartPoleObs, kTwoActions));
  const auto* ppo = dynamic_cast<const Ppo*>(learner.get());
  ASSERT_NE(ppo, nullptr);
  EXPECT_EQ(learner->rollout_length(), 64);
  EXPECT_DOUBLE_EQ(ppo->config().target_kl, 0.02);
  EXPECT_FALSE(ppo->config().clip_vloss);
  EXPECT_DOUBLE_EQ(ppo->config().learning_rate, 2.5e-4);
  const nn::ActorCriticConfig& network = learner->model()->config();
  EXPECT_EQ(network.obs_shape, (std::vector<int64_t>{4}));
  EXPECT_EQ(network.action_kind, nn::ActionKind::kDiscrete);
  EXPECT_EQ(network.action_dim, 2);
  EXPECT_EQ(network.hidden_sizes, (std::vector<int64_t>{32}));
  EXPECT_EQ(network.activation, "relu");
}

TEST(AlgorithmRegistryTest, BuildsA2cWithContinuousActions) {
  core::Config config = algorithm_config();
  config.apply_override("algo.a2c.optimizer=adam");
  config.apply_override("algo.a2c.normalize_reward=true");
  config.apply_override("algo.init_log_std=-0.5");
  config.apply_override("algo.normalize_observations=true");
  const std::unique_ptr<OnPolicyLearner> learner =
      as_on_policy(make_learner("a2c", config, envs::Space::box({3}, -8.0f, 8.0f), envs::Space::box({1}, -2.0f, 2.0f)));
  const auto* a2c = dynamic_cast<const A2c*>(learner.get());
  ASSERT_NE(a2c, nullptr);
  EXPECT_EQ(a2c->config().optimizer, "adam");
  EXPECT_TRUE(a2c->config().normalize_reward);
  EXPECT_EQ(learner->rollout_length(), 5);
  const nn::ActorCriticConfig& network = learner->model()->config();
  EXPECT_EQ(network.obs_shape, (std::vector<int64_t>{3}));
  EXPECT_EQ(network.action_kind, nn::ActionKind::kContinuous);
  EXPECT_EQ(network.action_dim, 1);
  EXPECT_DOUBLE_EQ(network.init_log_std, -0.5);
  EXPECT_TRUE(network.normalize_observations);
  EXPECT_TRUE(learner->model()->observation_stats());
}

TEST(AlgorithmRegistryTest, RejectsUnknownNamesBadValuesAndDiscreteObservations) {
  core::Config config = algorithm_config();
  try {
    make_learner("r2d2", config, kCartPoleObs, kTwoActions);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& error) {
    EXPECT_STREQ(error.what(), "unknown algorithm 'r2d2' (known: a2c, dqn, ppo, sac)");
  }
  EXPECT_THROW(make_learner("ppo", config, envs::Space::discrete(16), kTwoActions), std::invalid_argument);

  config.apply_override("algo.ppo.learning_rate=-1");
  try {
    make_learner("ppo", config, kCartPoleObs, kTwoActions);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("learning_rate=-1"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace concord::algos
