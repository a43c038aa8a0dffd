// The `seed_rl` policy with ranks as threads (comm::ThreadGroup): rank 0 learns from the envs the
// actor ranks step, and trains exactly as `single` does on the same envs, for PPO and for DQN;
// an actor rank that fails ends the run in one line naming it; misfits are refused in one line.
// (Under `concord launch`: tests/cli/multi_process_test.cpp.)
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "concord/algos/algorithm_registry.h"
#include "concord/comm/thread_group.h"
#include "concord/core/config.h"
#include "concord/envs/registry.h"
#include "concord/policies/policy_registry.h"
#include "envs/fake_env.h"
#include "policies/learning_runs.h"

namespace concord::policies {
namespace {

using testing::config_with;
using testing::learner_for;

envs::VectorEnvConfig env_config(const std::string& id, int num_envs) {
  envs::VectorEnvConfig env;
  env.env_id = id;
  env.num_envs = num_envs;
  env.seed = 11;
  return env;
}

struct Trained {
  torch::Tensor parameters;
  std::vector<double> returns;  // every episode's, in the order reported
  TrainingState state;
};

// Trains `algo` under `policy` from torch seed 5 on this thread (rank 0 under seed_rl, whose
// actor ranks serve on threads of their own). Returns what rank 0 learned; actor errors go to
// `actor_errors`.
Trained train(const std::string& policy_name, const std::string& algo, const std::vector<std::string>& overrides,
              const envs::VectorEnvConfig& env, int64_t steps, int world_size = 3,
              std::vector<std::string>* actor_errors = nullptr,
              std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
  const core::Config config = config_with(overrides);
  // The actor ranks' learners are built (as the CLI builds one on every rank) but never used; first,
  // so that rank 0's draws from the generator are those of `single`.
  std::vector<std::unique_ptr<algos::Learner>> idle;
  for (int rank = 1; rank < world_size && policy_name != "single"; ++rank)
    idle.push_back(learner_for(algo, config, env));
  torch::manual_seed(5);
  std::unique_ptr<algos::Learner> learner = learner_for(algo, config, env);
  Trained trained;
  TrainingCallbacks callbacks;
  callbacks.on_episode = [&](double episode_return, int64_t) { trained.returns.push_back(episode_return); };
  if (policy_name == "single") {
    make_policy("single", PolicyContext{config, env, *learner, torch::kCPU})
        ->train(trained.state, steps, int64_t{1} << 40, callbacks);
  } else {
    comm::ThreadGroup group(world_size, timeout);
    std::vector<std::unique_ptr<comm::Communicator>> communicators;
    for (int rank = 0; rank < world_size; ++rank) communicators.push_back(group.communicator(rank));
    std::vector<std::string> errors(static_cast<size_t>(world_size));
    std::vector<std::thread> actors;
    for (int rank = 1; rank < world_size; ++rank) {
      actors.emplace_back([&, rank] {
        try {
          make_policy(policy_name, PolicyContext{config, env, *idle[static_cast<size_t>(rank - 1)], torch::kCPU,
                                                 communicators[static_cast<size_t>(rank)].get()})
              ->train(*std::make_unique<TrainingState>(), steps, int64_t{1} << 40, {});
        } catch (const std::exception& error) {
          errors[static_cast<size_t>(rank)] = error.what();
        }
      });
    }
    try {
      make_policy(policy_name, PolicyContext{config, env, *learner, torch::kCPU, communicators[0].get()})
          ->train(trained.state, steps, int64_t{1} << 40, callbacks);
    } catch (const std::exception& error) {
      errors[0] = error.what();
    }
    for (std::thread& actor : actors) actor.join();
    if (actor_errors != nullptr) *actor_errors = errors;
  }
  trained.parameters = learner->flat_parameters().values().detach().clone();
  return trained;
}

TEST(SeedRl, PpoTrainsExactlyAsSingleOnTheSameEnvs) {
  const std::vector<std::string> ppo = {"algo.hidden_sizes=[16]", "algo.ppo.num_steps=32", "algo.ppo.num_minibatches=2",
                                        "algo.ppo.update_epochs=2"};
  const envs::VectorEnvConfig env = env_config("CartPole-v1", 4);
  const Trained single = train("single", "ppo", ppo, env, 4 * 32 * 6);
  std::vector<std::string> errors;
  const Trained seed_rl = train("seed_rl", "ppo", ppo, env, 4 * 32 * 6, 3, &errors);
  EXPECT_THAT(errors, ::testing::Each(""));
  EXPECT_EQ(seed_rl.state.global_step, single.state.global_step);
  EXPECT_EQ(seed_rl.state.updates, 6);
  EXPECT_FALSE(single.returns.empty());
  EXPECT_EQ(seed_rl.returns, single.returns);
  EXPECT_TRUE(torch::equal(seed_rl.parameters, single.parameters)) << "rank 0 learned what single learns";
}

TEST(SeedRl, DqnTrainsExactlyAsSingleOnTheSameEnvs) {
  const std::vector<std::string> dqn = {"algo.hidden_sizes=[16]", "algo.dqn.learning_starts=100",
                                        "algo.dqn.batch_size=16", "algo.dqn.train_frequency=2"};
  const envs::VectorEnvConfig env = env_config("CartPole-v1", 2);
  const Trained single = train("single", "dqn", dqn, env, 600);
  std::vector<std::string> errors;
  const Trained seed_rl = train("seed_rl", "dqn", dqn, env, 600, 3, &errors);
  EXPECT_THAT(errors, ::testing::Each(""));
  EXPECT_EQ(seed_rl.state.global_step, 600);
  EXPECT_EQ(seed_rl.state.updates, single.state.updates);
  EXPECT_GT(seed_rl.state.updates, 0);
  EXPECT_EQ(seed_rl.returns, single.returns);
  EXPECT_TRUE(torch::equal(seed_rl.parameters, single.parameters)) << "rank 0 learned what single learns";
}

// Agents with memory: rank 0 keeps every remote env's state, so recurrent PPO and R2D2 train
// exactly as under `single`.
TEST(SeedRl, RecurrentPpoAndR2d2TrainExactlyAsSingle) {
  const envs::VectorEnvConfig env = env_config("CartPoleNoVel-v1", 4);
  for (const auto& [algo, overrides] : std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"ppo",
            {"algo.hidden_sizes=[16]", "algo.recurrent=lstm", "algo.recurrent_size=8", "algo.ppo.num_steps=32",
             "algo.ppo.num_minibatches=2", "algo.ppo.update_epochs=2"}},
           {"dqn",
            {"algo.hidden_sizes=[16]", "algo.recurrent=gru", "algo.recurrent_size=8", "algo.dqn.learning_starts=200",
             "algo.dqn.batch_size=4", "algo.dqn.train_frequency=8", "algo.dqn.sequence_length=8", "algo.dqn.burn_in=4",
             "algo.dqn.n_step=2", "algo.dqn.prioritized=true"}}}) {
    const Trained single = train("single", algo, overrides, env, 4 * 32 * 4);
    std::vector<std::string> errors;
    const Trained seed_rl = train("seed_rl", algo, overrides, env, 4 * 32 * 4, 3, &errors);
    EXPECT_THAT(errors, ::testing::Each("")) << algo;
    EXPECT_GT(seed_rl.state.updates, 0) << algo;
    EXPECT_EQ(seed_rl.state.updates, single.state.updates) << algo;
    EXPECT_EQ(seed_rl.returns, single.returns) << algo;
    EXPECT_TRUE(torch::equal(seed_rl.parameters, single.parameters)) << algo << ": rank 0 learned what single learns";
  }
}

TEST(SeedRl, AnActorRankWhoseEnvFailsEndsTheRunNamingIt) {
  envs::testing::FakeEnvOptions options;
  options.throw_at_step = 30;
  // The ninth env made: after rank 0's learner's, the two idle learners' and two per make_policy
  // (the registry's and the policy's spec), the first of the actor ranks' four, whichever it is.
  options.throw_instance = 9;
  const envs::VectorEnvConfig env = env_config(envs::testing::register_fake_env(options), 4);
  std::vector<std::string> errors;
  train("seed_rl", "ppo", {"algo.hidden_sizes=[8]"}, env, 100'000, 3, &errors, std::chrono::seconds(2));
  ASSERT_EQ(errors.size(), 3u);
  EXPECT_TRUE(errors[1].find("FakeEnv: planned failure") != std::string::npos ||
              errors[2].find("FakeEnv: planned failure") != std::string::npos)
      << errors[1] << " / " << errors[2];
  EXPECT_THAT(errors[0], ::testing::StartsWith("policy 'seed_rl': actor rank "));
  EXPECT_THAT(errors[0], ::testing::HasSubstr(" did not step its envs: "));
  EXPECT_EQ(errors[0].find('\n'), std::string::npos) << errors[0];
}

std::string refusal(const envs::VectorEnvConfig& env, int world_size) {
  const core::Config config = config_with({});
  std::unique_ptr<algos::Learner> learner = learner_for("ppo", config, env);
  comm::ThreadGroup group(world_size, std::chrono::seconds(5));
  std::unique_ptr<comm::Communicator> communicator = group.communicator(0);
  try {
    make_policy("seed_rl", PolicyContext{config, env, *learner, torch::kCPU, communicator.get()});
  } catch (const std::invalid_argument& error) {
    return error.what();
  }
  return "";
}

TEST(SeedRl, RefusesWhatItCannotRunInOneLine) {
  EXPECT_EQ(refusal(env_config("CartPole-v1", 4), 1),
            "policy 'seed_rl' steps its envs on actor ranks beside the learner (rank 0): run it under a launcher "
            "with at least 2 ranks (concord launch -n 3 ...)");
  EXPECT_EQ(refusal(env_config("CartPole-v1", 5), 3),
            "policy 'seed_rl': env.num_envs = 5 must be divisible by its 2 actor ranks");
  envs::VectorEnvConfig async = env_config("CartPole-v1", 4);
  async.batch_size = 2;
  EXPECT_EQ(refusal(async, 3),
            "policy 'seed_rl' steps each actor rank's envs together: set env.batch_size = 0 (got 2)");
  EXPECT_EQ(refusal(env_config("CartPole-v1", 4), 3), "");
}

}  // namespace
}  // namespace concord::policies
