// actor_processes with its ranks as threads (comm::ThreadGroup): rank 0 learns, the others act.
// tests/cli/multi_process_test.cpp runs it as real processes, including an actor killed mid-run.
#include "concord/policies/actor_processes.h"

#include <mutex>
#include <numeric>
#include <thread>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "concord/algos/algorithm_registry.h"
#include "concord/comm/thread_group.h"
#include "concord/core/rng.h"
#include "concord/core/torch_thread.h"
#include "concord/policies/evaluation.h"
#include "concord/policies/policy_registry.h"
#include "concord/sync/sync_registry.h"
#include "learning_outcome.h"

namespace concord::policies {
namespace {

core::Config fast_ppo_config(const std::vector<std::string>& overrides = {}) {
  core::ConfigSchema schema;
  algos::declare_algorithm_keys(schema);
  declare_policy_keys(schema);
  sync::declare_sync_keys(schema);
  core::Config config(schema);
  for (const char* assignment :
       {"algo.ppo.num_steps=32", "algo.ppo.num_minibatches=2", "algo.ppo.update_epochs=4",
        "algo.ppo.learning_rate=3e-3", "algo.ppo.gamma=0.98", "algo.ppo.gae_lambda=0.8", "algo.ppo.ent_coef=0.0"}) {
    config.apply_override(assignment);
  }
  for (const std::string& assignment : overrides) config.apply_override(assignment);
  return config;
}

envs::VectorEnvConfig cartpole(int num_envs, uint64_t seed) {
  envs::VectorEnvConfig env;
  env.env_id = "CartPole-v1";
  env.num_envs = num_envs;
  env.seed = seed;
  return env;
}

struct LearnerOutcome {
  TrainingState state;
  double eval_mean = 0.0;
  algos::Metrics last_metrics;
  std::vector<std::string> errors;
};

// Rank 0 learns and the others act, each rank a thread with its own learner (as in processes).
LearnerOutcome run(int world_size, int64_t steps, const core::Config& config, uint64_t seed = 7) {
  comm::ThreadGroup group(world_size, std::chrono::seconds(60));
  std::vector<std::unique_ptr<comm::Communicator>> communicators;
  for (int rank = 0; rank < world_size; ++rank) communicators.push_back(group.communicator(rank));
  LearnerOutcome outcome;
  outcome.errors.resize(static_cast<size_t>(world_size));
  std::vector<std::thread> threads;
  std::mutex construction;  // the global generator initialises weights: one rank at a time
  for (int rank = 0; rank < world_size; ++rank) {
    // Each rank samples actions and minibatches from its own generator, as a process would.
    threads.push_back(core::torch_thread(core::derive_seed(seed, static_cast<uint64_t>(rank)), [&, rank] {
      std::unique_ptr<comm::Communicator> communicator = std::move(communicators[static_cast<size_t>(rank)]);
      try {
        std::unique_ptr<algos::OnPolicyLearner> learner;
        {
          std::lock_guard<std::mutex> lock(construction);
          torch::manual_seed(seed + static_cast<uint64_t>(rank));
          learner = algos::as_on_policy(
              algos::make_learner("ppo", config, envs::Space::box({4}, -1.0f, 1.0f), envs::Space::discrete(2)));
        }
        auto policy =
            make_policy("actor_processes", PolicyContext{config, cartpole(16, seed + static_cast<uint64_t>(rank)),
                                                         *learner, torch::kCPU, communicator.get()});
        TrainingState state;
        TrainingCallbacks callbacks;
        callbacks.on_update = [&](const TrainingState&, const algos::Metrics& metrics, const core::EpisodeStats&) {
          if (rank == 0) outcome.last_metrics = metrics;
        };
        policy->train(state, steps, int64_t{1} << 40, callbacks);
        if (rank == 0) {
          outcome.state = state;
          const std::vector<double> returns = evaluate_episodes(*learner, cartpole(4, 99), 10);
          outcome.eval_mean =
              std::accumulate(returns.begin(), returns.end(), 0.0) / static_cast<double>(returns.size());
        }
      } catch (const std::exception& error) {
        outcome.errors[static_cast<size_t>(rank)] = error.what();
      }
    }));
  }
  for (std::thread& thread : threads) thread.join();
  return outcome;
}

// Ranks as threads draw from generators of their own, as processes do; the bar is the threaded
// policies' (random ~22); tests/cli/multi_process_test.cpp holds real processes to 150.
TEST(ActorProcessesLearning, SynchronousActorsFeedOneLearnerThatLearns) {
  const auto train = [](uint64_t seed) {
    const LearnerOutcome outcome = run(3, 100'000, fast_ppo_config(), seed);
    for (const std::string& error : outcome.errors) EXPECT_EQ(error, "");
    // 2 actors x 8 envs x 32 steps = 512 steps per update.
    EXPECT_EQ(outcome.state.global_step % 512, 0);
    EXPECT_EQ(outcome.state.updates, outcome.state.global_step / 512);
    EXPECT_EQ(outcome.last_metrics.at("charts/policy_lag"), 0.0);
    EXPECT_EQ(outcome.last_metrics.at("actors/alive"), 2.0);
    return outcome.eval_mean;
  };
  EXPECT_TRUE(test::learns(train, test::LearningBar{100.0}));
}

TEST(ActorProcessesLearning, AsynchronousActorsLagOneUpdateAndStillLearn) {
  const auto train = [](uint64_t seed) {
    const LearnerOutcome outcome = run(3, 60'000, fast_ppo_config({"policy.actor_processes.synchronous=false"}), seed);
    for (const std::string& error : outcome.errors) EXPECT_EQ(error, "");
    EXPECT_EQ(outcome.last_metrics.at("charts/policy_lag"), 1.0);
    return outcome.eval_mean;
  };
  EXPECT_TRUE(test::learns(train, test::LearningBar{100.0}));
}

TEST(ActorProcesses, ParametersEveryKUpdatesGrowTheLag) {
  const LearnerOutcome outcome = run(2, 4'096, fast_ppo_config({"policy.actor_processes.broadcast_every=4"}));
  for (const std::string& error : outcome.errors) ASSERT_EQ(error, "");
  // 16 envs x 32 = 512 steps per update: 8 updates; the last rollout used update 4's parameters.
  EXPECT_EQ(outcome.state.updates, 8);
  EXPECT_EQ(outcome.last_metrics.at("charts/policy_lag"), 3.0);
}

TEST(ActorProcesses, RefusesWhatCannotWork) {
  const core::Config config = fast_ppo_config();
  const auto refusal = [&](int world_size, int num_envs, const std::vector<std::string>& overrides) -> std::string {
    comm::ThreadGroup group(world_size, std::chrono::milliseconds(200));
    auto communicator = group.communicator(0);
    const core::Config changed = fast_ppo_config(overrides);
    auto learner = algos::as_on_policy(
        algos::make_learner("ppo", changed, envs::Space::box({4}, -1.0f, 1.0f), envs::Space::discrete(2)));
    try {
      make_policy("actor_processes",
                  PolicyContext{changed, cartpole(num_envs, 1), *learner, torch::kCPU, communicator.get()});
    } catch (const std::invalid_argument& error) {
      return error.what();
    }
    return "";
  };
  EXPECT_NE(refusal(1, 16, {}).find("needs a learner and at least one actor process"), std::string::npos);
  EXPECT_NE(refusal(3, 15, {}).find("must be divisible by its 2 actor processes"), std::string::npos);
  EXPECT_NE(refusal(2, 16, {"policy.actor_processes.on_actor_failure=\"shrug\""}).find("\"continue\" or \"abort\""),
            std::string::npos);
  EXPECT_NE(refusal(2, 16, {"policy.actor_processes.broadcast_every=0"}).find("broadcast_every must be >= 1"),
            std::string::npos);
  EXPECT_EQ(refusal(2, 16, {}), "");
}

}  // namespace
}  // namespace concord::policies
