// Agents with memory under the policies: each policy that carries an actor's state trains a
// recurrent network, `sync_vector` exactly as `single`, recurrent PPO learns CartPole without its
// velocities, and the policies that cannot carry the state refuse it in one line.
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
using testing::flat_parameters_of;
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
              uint64_t seed) {
  torch::manual_seed(seed);
  Trained trained;
  trained.learner = testing::learner_for("ppo", config, env);
  EXPECT_TRUE(trained.learner->acts_with_memory());
  make_policy(policy, PolicyContext{config, env, *trained.learner, torch::kCPU})
      ->train(trained.state, steps, int64_t{1} << 40, {});
  return trained;
}

torch::Tensor parameters_of(Trained& trained) {
  nn::ActorCritic model = dynamic_cast<algos::OnPolicyLearner&>(*trained.learner).model();
  return flat_parameters_of(model);
}

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

TEST(RecurrentPolicies, APolicyThatCannotCarryTheStateRefusesItInOneLine) {
  const core::Config config = recurrent_ppo();
  const envs::VectorEnvConfig env = no_velocity(8, 1, 1);
  std::unique_ptr<algos::Learner> learner = testing::learner_for("ppo", config, env);
  for (const std::string policy : {"central_inference", "actor_processes"}) {
    try {
      make_policy(policy, PolicyContext{config, env, *learner, torch::kCPU});
      ADD_FAILURE() << policy << " accepted a recurrent network";
    } catch (const std::invalid_argument& error) {
      const std::string message = error.what();
      EXPECT_NE(message.find("policy '" + policy + "' does not carry a recurrent network's state"), std::string::npos)
          << message;
      EXPECT_NE(message.find("use train.policy single, sync_vector"), std::string::npos) << message;
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

}  // namespace
}  // namespace concord::policies
