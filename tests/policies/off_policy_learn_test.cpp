// The off-policy algorithms under every policy that runs them: the same DQN object learns
// CartPole-v1 under single, sync_vector, async_learner (acting one update behind) and
// multi_learner (2 ranks as threads), and SAC learns Pendulum-v1 under single, async_learner and
// multi_learner, in short runs (about 10 s each), clearly above a random policy
// (CartPole ~22; Pendulum about -1,200). The shipped presets (configs/dqn_cartpole.toml,
// configs/sac_pendulum.toml) train longer; bench/dqn_speed and bench/RESULTS.md hold their figures.
#include <memory>
#include <mutex>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "learning_outcome.h"
#include "policies/learning_runs.h"

#include "concord/algos/algorithm_registry.h"
#include "concord/comm/thread_group.h"
#include "concord/core/rng.h"
#include "concord/core/torch_thread.h"
#include "concord/envs/registry.h"
#include "concord/policies/policy_registry.h"
#include "concord/policies/runtime/evaluation.h"
#include "concord/sync/sync_registry.h"

namespace concord::policies {
namespace {

using testing::config_with;
using testing::evaluate;
using testing::kFastDqn;
using testing::kFastDqnSteps;
using testing::kFastSac;
using testing::kFastSacSteps;
using testing::learner_for;

envs::VectorEnvConfig env_config(const std::string& id, int num_envs, int threads, uint64_t seed) {
  envs::VectorEnvConfig env;
  env.env_id = id;
  env.num_envs = num_envs;
  env.num_threads = threads;
  env.seed = seed;
  return env;
}

struct Case {
  std::string policy;
  std::string algo;
  std::string env_id;
  int num_envs;
  int env_threads;
  int64_t steps;
  double bar;
  std::vector<std::string> overrides = {};  // --set assignments after the fast settings
};

void PrintTo(const Case& c, std::ostream* out) { *out << c.policy << " / " << c.algo; }

class OffPolicyLearning : public ::testing::TestWithParam<Case> {};

double train_and_evaluate(const Case& c, uint64_t seed) {
  std::vector<std::string> settings = c.algo == "dqn" ? kFastDqn : kFastSac;
  settings.insert(settings.end(), c.overrides.begin(), c.overrides.end());
  return testing::train_and_evaluate(c.policy, c.algo, config_with(settings),
                                     env_config(c.env_id, c.num_envs, c.env_threads, seed), c.steps, seed);
}

TEST_P(OffPolicyLearning, ReturnRisesWellAboveRandom) {
  const Case& c = GetParam();
  EXPECT_TRUE(test::learns([&](uint64_t seed) { return train_and_evaluate(c, seed); }, test::LearningBar{c.bar}))
      << c.policy << " / " << c.algo;
}

INSTANTIATE_TEST_SUITE_P(
    Policies, OffPolicyLearning,
    ::testing::Values(Case{"single", "dqn", "CartPole-v1", 1, 1, kFastDqnSteps, 80.0},
                      Case{"sync_vector", "dqn", "CartPole-v1", 4, 2, kFastDqnSteps, 80.0},
                      Case{"async_learner", "dqn", "CartPole-v1", 1, 1, kFastDqnSteps, 80.0},
                      // A3C's asynchronous one-step Q-learning: 2 workers, 1 env each,
                      // each updating every 5 of its steps (A3C's I_AsyncUpdate).
                      Case{"hogwild", "dqn", "CartPole-v1", 1, 1, kFastDqnSteps, 80.0, {"algo.dqn.train_frequency=5"}},
                      Case{"single", "sac", "Pendulum-v1", 1, 1, kFastSacSteps, -700.0},
                      Case{"async_learner", "sac", "Pendulum-v1", 1, 1, kFastSacSteps, -700.0}));

// multi_learner: two ranks as threads, each with its own replay and envs, gradients averaged in
// every step; the replicas stay identical, and rank 0's learns. Returns its evaluation.
double two_ranks_learn(const std::string& algo, const std::vector<std::string>& overrides, const std::string& env_id,
                       int envs_per_rank, int64_t steps, uint64_t seed) {
  const core::Config config = config_with(overrides);
  comm::ThreadGroup group(2, std::chrono::seconds(60));
  std::vector<std::unique_ptr<comm::Communicator>> communicators;
  for (int rank = 0; rank < 2; ++rank) communicators.push_back(group.communicator(rank));
  std::vector<torch::Tensor> parameters(2);
  std::vector<std::string> errors(2);
  double score = 0.0;
  std::mutex construction;  // the global generator initialises weights: one rank at a time
  std::vector<std::thread> threads;
  for (int rank = 0; rank < 2; ++rank) {
    threads.push_back(core::torch_thread(core::derive_seed(seed, static_cast<uint64_t>(rank)), [&, rank] {
      try {
        const envs::VectorEnvConfig env =
            env_config(env_id, 2 * envs_per_rank, 1, seed + 10 * static_cast<uint64_t>(rank));
        std::unique_ptr<algos::Learner> learner;
        {
          std::lock_guard<std::mutex> lock(construction);
          torch::manual_seed(seed + static_cast<uint64_t>(rank));
          learner = learner_for(algo, config, env);
        }
        std::unique_ptr<Policy> policy = make_policy(
            "multi_learner",
            PolicyContext{config, env, *learner, torch::kCPU, communicators[static_cast<size_t>(rank)].get()});
        TrainingState state;
        policy->train(state, steps, int64_t{1} << 40, {});
        EXPECT_EQ(state.global_step, steps);
        parameters[static_cast<size_t>(rank)] = learner->flat_parameters().values().detach().clone();
        if (rank == 0) score = evaluate(*learner, env_config(env_id, 1, 1, 0), seed);
      } catch (const std::exception& error) {
        errors[static_cast<size_t>(rank)] = error.what();
      }
    }));
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(errors[0], "");
  EXPECT_EQ(errors[1], "");
  if (parameters[0].defined() && parameters[1].defined()) {
    EXPECT_TRUE(torch::equal(parameters[0], parameters[1])) << "the replicas diverged";
  }
  return score;
}

TEST(MultiLearnerOffPolicyLearning, TwoDqnRanksStayIdenticalAndLearn) {
  EXPECT_TRUE(test::learns(
      [](uint64_t seed) { return two_ranks_learn("dqn", kFastDqn, "CartPole-v1", 1, kFastDqnSteps, seed); },
      test::LearningBar{80.0}));
}

// SAC's three networks (actor, twin critics) and its entropy coefficient move in lockstep too.
TEST(MultiLearnerOffPolicyLearning, TwoSacRanksStayIdenticalAndLearn) {
  EXPECT_TRUE(test::learns(
      [](uint64_t seed) { return two_ranks_learn("sac", kFastSac, "Pendulum-v1", 1, 2 * kFastSacSteps, seed); },
      test::LearningBar{-700.0}));
}

}  // namespace
}  // namespace concord::policies
