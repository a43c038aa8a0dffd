// Agents with memory under the policies: each policy that carries an actor's state trains a
// recurrent network, `sync_vector` exactly as `single`, recurrent PPO learns CartPole without its
// velocities, and the policies that cannot carry R2D2's state to its replay refuse it in one line.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "concord/algos/algorithm_registry.h"
#include "concord/algos/on_policy_learner.h"
#include "concord/policies/policy_registry.h"
#include "learning_outcome.h"
#include "learning_runs.h"
#include "policy_fakes.h"

namespace concord::policies {
namespace {

using testing::config_with;
using testing::shipped;

// The shipped recurrent PPO config (configs/ppo_lstm_cartpole_novel.toml) with `overrides`.
core::Config recurrent_ppo(const std::vector<std::string>& overrides = {}) {
  core::Config config = config_with({});
  const testing::Shipped file = shipped("ppo_lstm_cartpole_novel.toml");
  config.merge_toml(file.algo_tables, "the [algo] tables of configs/" + file.file);
  for (const std::string& assignment : overrides) config.apply_override(assignment);
  return config;
}

envs::VectorEnvConfig no_velocity(int num_envs, int threads, uint64_t seed) {
  envs::VectorEnvConfig env;
  env.env_id = "CartPoleNoVel-v1";
  env.num_envs = num_envs;
  env.num_threads = threads;
  env.seed = seed;
  return env;
}

struct Trained {
  std::unique_ptr<algos::Learner> learner;
  TrainingState state;
};

Trained train(const std::string& policy, const core::Config& config, const envs::VectorEnvConfig& env, int64_t steps,
              uint64_t seed, const std::string& algo = "ppo") {
  torch::manual_seed(seed);
  Trained trained;
  trained.learner = testing::learner_for(algo, config, env);
  EXPECT_TRUE(trained.learner->acts_with_memory());
  make_policy(policy, PolicyContext{config, env, *trained.learner, torch::kCPU})
      ->train(trained.state, steps, int64_t{1} << 40, {});
  return trained;
}

torch::Tensor parameters_of(Trained& trained) { return trained.learner->flat_parameters().values().detach().clone(); }

TEST(RecurrentPolicies, SyncVectorTrainsARecurrentNetworkExactlyAsSingle) {
  const core::Config config = recurrent_ppo({"algo.ppo.update_epochs=2"});
  Trained single = train("single", config, no_velocity(8, 1, 3), 4 * 256, 3);
  Trained threads = train("sync_vector", config, no_velocity(8, 2, 3), 4 * 256, 3);
  EXPECT_EQ(single.state.updates, 4);
  EXPECT_TRUE(torch::equal(parameters_of(single), parameters_of(threads)));
}

TEST(RecurrentPolicies, EveryPolicyThatCarriesTheStateOnThreadsTrainsARecurrentNetwork) {
  for (const auto& [policy, overrides] : std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"hogwild", {"policy.hogwild.workers=2", "algo.ppo.update_epochs=1"}},
           {"async_learner", {"algo.ppo.update_epochs=2"}}}) {
    const core::Config config = recurrent_ppo(overrides);
    Trained trained = train(policy, config, no_velocity(8, 1, 5), 4 * 256, 5);
    EXPECT_GE(trained.state.global_step, 4 * 256) << policy;
    EXPECT_GT(trained.state.updates, 0) << policy;
    EXPECT_TRUE(torch::isfinite(parameters_of(trained)).all().item<bool>()) << policy;
  }
}

// central_inference's predictors run every agent's request from the state the agent sends with
// it: one agent taking turns with the learner trains exactly as single (A2C, whose update draws
// nothing: PPO's minibatch order comes from the trainer thread's generator), and several agents
// train PPO.
TEST(RecurrentPolicies, CentralInferenceCarriesEachAgentsStateThroughThePredictors) {
  const core::Config one_agent =
      config_with({"algo.recurrent=\"lstm\"", "algo.recurrent_size=16", "algo.a2c.num_steps=8",
                   "policy.central_inference.agents=1", "policy.central_inference.predictors=1"});
  Trained single = train("single", one_agent, no_velocity(4, 1, 3), 4 * 8 * 30, 3, "a2c");
  Trained central = train("central_inference", one_agent, no_velocity(4, 1, 3), 4 * 8 * 30, 3, "a2c");
  EXPECT_EQ(single.state.updates, 30);
  EXPECT_EQ(central.state.updates, single.state.updates);
  EXPECT_TRUE(torch::equal(parameters_of(single), parameters_of(central)));

  const core::Config agents = recurrent_ppo(
      {"algo.ppo.update_epochs=1", "policy.central_inference.agents=4", "policy.central_inference.predictors=2"});
  Trained trained = train("central_inference", agents, no_velocity(8, 1, 5), 4 * 256, 5);
  EXPECT_GE(trained.state.global_step, 4 * 256);
  EXPECT_TRUE(torch::isfinite(parameters_of(trained)).all().item<bool>());
}

// R2D2 under apex on threads, its own arrangement (each actor thread acts with its copy of the
// network, carries its envs' states and sends each step's state with it, and the learner cuts
// every actor's stream into sequences), and under async_learner (one collector thread).
TEST(RecurrentPolicies, ActorThreadsFeedR2d2sSequenceReplay) {
  for (const std::string policy : {"apex", "async_learner"}) {
    core::Config config = config_with({"policy.apex.actors=2"});
    const testing::Shipped file = shipped("r2d2_cartpole_novel.toml");
    config.merge_toml(file.algo_tables, "the [algo] tables of configs/" + file.file);
    for (const std::string& assignment : {"algo.recurrent_size=16", "algo.dqn.learning_starts=400",
                                          "algo.dqn.batch_size=4", "algo.dqn.sequence_length=8", "algo.dqn.burn_in=4"})
      config.apply_override(assignment);
    torch::manual_seed(3);
    const envs::VectorEnvConfig env = no_velocity(4, 1, 3);
    std::unique_ptr<algos::Learner> learner = testing::learner_for("dqn", config, env);
    TrainingState state;
    make_policy(policy, PolicyContext{config, env, *learner, torch::kCPU})->train(state, 3'000, int64_t{1} << 40, {});
    EXPECT_GE(state.global_step, 3'000) << policy;
    EXPECT_GT(state.updates, 0) << policy;
    EXPECT_TRUE(torch::isfinite(learner->flat_parameters().values()).all().item<bool>()) << policy;
  }
}

// R2D2's sequences need each step's state on its way to the replay: the policies that act for an
// off-policy learner from a batched service or learn from single transitions refuse it in one line.
TEST(RecurrentPolicies, R2d2IsRefusedWhereTheStateDoesNotReachTheReplay) {
  core::Config config = config_with({});
  const testing::Shipped file = shipped("r2d2_cartpole_novel.toml");
  config.merge_toml(file.algo_tables, "the [algo] tables of configs/" + file.file);
  const envs::VectorEnvConfig env = no_velocity(8, 1, 1);
  std::unique_ptr<algos::Learner> learner = testing::learner_for("dqn", config, env);
  ASSERT_TRUE(learner->acts_with_memory());
  for (const std::string policy : {"hogwild", "central_inference"}) {
    try {
      make_policy(policy, PolicyContext{config, env, *learner, torch::kCPU});
      ADD_FAILURE() << policy << " accepted R2D2";
    } catch (const std::invalid_argument& error) {
      const std::string message = error.what();
      EXPECT_NE(message.find("use train.policy single, sync_vector, async_learner, multi_learner, apex, seed_rl"),
                std::string::npos)
          << message;
      EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    }
  }
}

// CartPole with its velocities hidden needs memory: the shipped recurrent PPO, for a quarter of
// its 100k steps, ends clearly above a random policy (~22) on a deterministic evaluation.
TEST(RecurrentLearning, PpoWithAnLstmLearnsCartPoleWithoutVelocities) {
  const core::Config config = recurrent_ppo();
  EXPECT_TRUE(test::learns(
      [&](uint64_t seed) {
        Trained trained = train("single", config, no_velocity(8, 1, seed), 25'600, seed);
        return testing::evaluate(*trained.learner, no_velocity(8, 1, seed), seed);
      },
      test::LearningBar{100.0}));
}

// The same agent and budget under each policy that carries its state on threads, to the same bar
// (sync_vector and seed_rl train exactly as single: tested bit for bit above and in seed_rl_test).
class RecurrentPolicyLearning : public ::testing::TestWithParam<std::pair<std::string, std::vector<std::string>>> {};

TEST_P(RecurrentPolicyLearning, PpoWithAnLstmLearnsCartPoleWithoutVelocities) {
  const std::string policy = GetParam().first;
  const std::vector<std::string> overrides = GetParam().second;
  const core::Config config = recurrent_ppo(overrides);
  EXPECT_TRUE(test::learns(
      [&](uint64_t seed) {
        Trained trained = train(policy, config, no_velocity(8, 1, seed), 25'600, seed);
        return testing::evaluate(*trained.learner, no_velocity(8, 1, seed), seed);
      },
      test::LearningBar{100.0}))
      << policy;
}

INSTANTIATE_TEST_SUITE_P(
    Policies, RecurrentPolicyLearning,
    ::testing::Values(std::make_pair(std::string("hogwild"), std::vector<std::string>{"policy.hogwild.actors=2"}),
                      std::make_pair(std::string("async_learner"), std::vector<std::string>{}),
                      std::make_pair(std::string("central_inference"),
                                     std::vector<std::string>{"policy.central_inference.actors=4"})),
    [](const ::testing::TestParamInfo<std::pair<std::string, std::vector<std::string>>>& info) {
      return info.param.first;
    });

}  // namespace
}  // namespace concord::policies
