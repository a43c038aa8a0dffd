// multi_learner's ranks as threads (comm::ThreadGroup): the same policy code that runs one
// process per rank, checked for lockstep, identical replicas, global step counting, learning,
// and its refusals. tests/cli/multi_process_test.cpp runs it as real processes.
#include "concord/policies/multi_learner.h"

#include <mutex>
#include <numeric>
#include <thread>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "concord/algos/algorithm_registry.h"
#include "concord/comm/thread_group.h"
#include "concord/core/checkpoint.h"
#include "concord/core/rng.h"
#include "concord/core/torch_thread.h"
#include "concord/explore/bonus_registry.h"
#include "concord/policies/policy_registry.h"
#include "concord/policies/runtime/evaluation.h"
#include "concord/sync/sync_registry.h"
#include "learning_outcome.h"
#include "policies/learning_runs.h"

namespace concord::policies {
namespace {

core::Config fast_ppo_config() {
  return testing::config_with({"algo.ppo.num_steps=32", "algo.ppo.num_minibatches=2", "algo.ppo.update_epochs=4",
                               "algo.ppo.learning_rate=3e-3", "algo.ppo.gamma=0.98", "algo.ppo.gae_lambda=0.8",
                               "algo.ppo.ent_coef=0.0", "policy.multi_learner.check_every=1"});
}

envs::VectorEnvConfig cartpole(int num_envs, uint64_t seed) {
  envs::VectorEnvConfig env;
  env.env_id = "CartPole-v1";
  env.num_envs = num_envs;
  env.seed = seed;
  return env;
}

std::unique_ptr<algos::OnPolicyLearner> ppo(const core::Config& config) {
  return algos::as_on_policy(
      algos::make_learner("ppo", config, envs::Space::box({4}, -1.0f, 1.0f), envs::Space::discrete(2)));
}

struct RankOutcome {
  TrainingState state;
  torch::Tensor parameters;
  double eval_mean = 0.0;
  algos::Metrics last_metrics;
  std::string error;
};

// Trains `world_size` ranks as threads for `steps` global steps; rank r's learner starts from
// seed `seed` + r (the sync strategy must make them equal), its envs from `seed` - 93 + r.
std::vector<RankOutcome> train_ranks(int world_size, int64_t steps, const core::Config& config, uint64_t seed = 100) {
  comm::ThreadGroup group(world_size, std::chrono::seconds(60));
  std::vector<std::unique_ptr<comm::Communicator>> communicators;
  for (int rank = 0; rank < world_size; ++rank) communicators.push_back(group.communicator(rank));
  std::vector<RankOutcome> outcomes(static_cast<size_t>(world_size));
  std::vector<std::thread> threads;
  std::mutex construction;  // the global generator initialises weights: one rank at a time
  for (int rank = 0; rank < world_size; ++rank) {
    // Each rank samples actions and minibatches from its own generator, as a process would.
    threads.push_back(core::torch_thread(core::derive_seed(seed, static_cast<uint64_t>(rank)), [&, rank] {
      RankOutcome& outcome = outcomes[static_cast<size_t>(rank)];
      try {
        std::unique_ptr<algos::OnPolicyLearner> learner;
        {
          std::lock_guard<std::mutex> lock(construction);
          torch::manual_seed(seed + static_cast<uint64_t>(rank));
          learner = ppo(config);
        }
        std::unique_ptr<Policy> policy = make_policy(
            "multi_learner", PolicyContext{config, cartpole(16, seed - 93 + static_cast<uint64_t>(rank)), *learner,
                                           torch::kCPU, communicators[static_cast<size_t>(rank)].get()});
        TrainingCallbacks callbacks;
        callbacks.on_update = [&](const TrainingState&, const algos::Metrics& metrics, const core::EpisodeStats&) {
          outcome.last_metrics = metrics;
        };
        policy->train(outcome.state, steps, int64_t{1} << 40, callbacks);
        outcome.parameters = learner->flat_parameters().values().detach().clone();
        if (rank == 0) {
          const std::vector<double> returns = runtime::evaluate_episodes(*learner, cartpole(4, 99), 10);
          outcome.eval_mean =
              std::accumulate(returns.begin(), returns.end(), 0.0) / static_cast<double>(returns.size());
        }
      } catch (const std::exception& error) {
        outcome.error = error.what();
      }
    }));
  }
  for (std::thread& thread : threads) thread.join();
  return outcomes;
}

// Ranks as threads draw from generators of their own, as processes do; the bar is the threaded
// policies' (random ~22); tests/cli/multi_process_test.cpp holds real processes to 150.
TEST(MultiLearnerLearning, TwoRanksStayIdenticalCountGlobalStepsAndLearn) {
  const auto train = [](uint64_t seed) {
    const std::vector<RankOutcome> ranks = train_ranks(2, 100'000, fast_ppo_config(), 99 + seed);
    for (const RankOutcome& rank : ranks) EXPECT_EQ(rank.error, "");
    if (!ranks[0].error.empty() || !ranks[1].error.empty()) return 0.0;
    // 8 envs per rank x 32 steps x 2 ranks = 512 global steps per update.
    EXPECT_EQ(ranks[0].state.global_step % 512, 0);
    EXPECT_GE(ranks[0].state.global_step, 100'000);
    EXPECT_EQ(ranks[0].state.global_step, ranks[1].state.global_step);
    EXPECT_EQ(ranks[0].state.updates, ranks[0].state.global_step / 512);
    EXPECT_TRUE(torch::equal(ranks[0].parameters, ranks[1].parameters));
    EXPECT_EQ(ranks[0].last_metrics.at("sync/ranks"), 2.0);
    // 8 gradient steps per update, one round each.
    EXPECT_EQ(ranks[0].last_metrics.at("sync/rounds"), 8.0 * static_cast<double>(ranks[0].state.updates));
    return ranks[0].eval_mean;
  };
  EXPECT_TRUE(test::learns(train, test::LearningBar{100.0}));
}

// The RL learner runs unchanged under every sync strategy chosen by name; replicas that are
// allowed to drift are not checked bit for bit, and every strategy reports its communication.
class MultiLearnerStrategies : public ::testing::TestWithParam<std::string> {};

TEST_P(MultiLearnerStrategies, RunInLockstepAndCommunicate) {
  core::Config config = fast_ppo_config();
  config.apply_override("sync.strategy=\"" + GetParam() + "\"");
  const std::vector<RankOutcome> ranks = train_ranks(2, 4'096, config);
  for (const RankOutcome& rank : ranks) ASSERT_EQ(rank.error, "") << GetParam();
  EXPECT_EQ(ranks[0].state.global_step, 4'096);
  EXPECT_EQ(ranks[1].state.updates, 8);
  EXPECT_GT(ranks[0].last_metrics.at("sync/rounds"), 0.0) << GetParam();
  EXPECT_GT(ranks[0].last_metrics.at("sync/bytes"), 0.0) << GetParam();
}

INSTANTIATE_TEST_SUITE_P(ByName, MultiLearnerStrategies,
                         ::testing::Values("allreduce", "local_sgd", "easgd", "gossip"));

// An agent with memory: every rank carries its own envs' states and learns from whole sequences,
// and the replicas stay identical.
TEST(MultiLearner, RecurrentPpoRanksCarryTheirStatesAndStayIdentical) {
  core::Config config = fast_ppo_config();
  config.apply_override("algo.recurrent=\"lstm\"");
  config.apply_override("algo.recurrent_size=8");
  const std::vector<RankOutcome> ranks = train_ranks(2, 4'096, config);
  for (const RankOutcome& rank : ranks) ASSERT_EQ(rank.error, "");
  EXPECT_EQ(ranks[0].state.global_step, 4'096);
  EXPECT_EQ(ranks[1].state.updates, 8);
  EXPECT_TRUE(torch::equal(ranks[0].parameters, ranks[1].parameters));
  EXPECT_TRUE(torch::isfinite(ranks[0].parameters).all().item<bool>());
}

TEST(MultiLearner, AStopOnOneRankStopsEveryRankAtTheSameUpdate) {
  comm::ThreadGroup group(2, std::chrono::seconds(30));
  std::vector<std::unique_ptr<comm::Communicator>> communicators;
  for (int rank = 0; rank < 2; ++rank) communicators.push_back(group.communicator(rank));
  const core::Config config = fast_ppo_config();
  std::vector<TrainingState> states(2);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < 2; ++rank) {
    threads.emplace_back([&, rank] {
      std::unique_ptr<algos::OnPolicyLearner> learner = ppo(config);
      auto policy = make_policy("multi_learner", PolicyContext{config, cartpole(16, 1), *learner, torch::kCPU,
                                                               communicators[static_cast<size_t>(rank)].get()});
      TrainingCallbacks callbacks;
      TrainingState& state = states[static_cast<size_t>(rank)];
      // Only rank 1 is asked to stop, after its third update.
      callbacks.should_stop = [&, rank] { return rank == 1 && state.updates >= 3; };
      policy->train(state, 1'000'000, int64_t{1} << 40, callbacks);
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(states[0].updates, 3);
  EXPECT_EQ(states[1].updates, 3);
}

std::string refusal(const core::Config& config, int world_size, int num_envs) {
  comm::ThreadGroup group(world_size, std::chrono::milliseconds(500));
  std::vector<std::unique_ptr<comm::Communicator>> communicators;
  for (int rank = 0; rank < world_size; ++rank) communicators.push_back(group.communicator(rank));
  std::unique_ptr<algos::OnPolicyLearner> learner = ppo(config);
  try {
    make_policy("multi_learner",
                PolicyContext{config, cartpole(num_envs, 1), *learner, torch::kCPU, communicators[0].get()});
  } catch (const std::invalid_argument& error) {
    return error.what();
  }
  return "";
}

TEST(MultiLearner, RefusesWhatCannotRunInLockstep) {
  core::Config config = fast_ppo_config();
  EXPECT_NE(refusal(config, 2, 15).find("env.num_envs = 15 must be divisible by its 2 ranks"), std::string::npos);
  core::Config early_stop = fast_ppo_config();
  early_stop.apply_override("algo.ppo.target_kl=0.01");
  EXPECT_NE(refusal(early_stop, 1, 16).find("set algo.ppo.target_kl = 0"), std::string::npos);
  core::Config none = fast_ppo_config();
  none.apply_override("sync.strategy=\"none\"");
  EXPECT_NE(refusal(none, 2, 16).find("sync strategy 'none' keeps replicas apart"), std::string::npos);
  core::Config unknown = fast_ppo_config();
  unknown.apply_override("sync.strategy=\"telepathy\"");
  EXPECT_NE(refusal(unknown, 1, 16).find("unknown sync strategy 'telepathy' (known: none, allreduce"),
            std::string::npos);
}

TEST(MultiLearner, ReplicasThatDivergeAreCaught) {
  // One rank's parameters are changed behind the sync strategy's back; the check must notice.
  comm::ThreadGroup group(2, std::chrono::seconds(30));
  std::vector<std::unique_ptr<comm::Communicator>> communicators;
  for (int rank = 0; rank < 2; ++rank) communicators.push_back(group.communicator(rank));
  const core::Config config = fast_ppo_config();
  std::vector<std::string> errors(2);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < 2; ++rank) {
    threads.emplace_back([&, rank] {
      // Owned by the thread: a rank that fails leaves the group, and the other sees it at once.
      std::unique_ptr<comm::Communicator> communicator = std::move(communicators[static_cast<size_t>(rank)]);
      try {
        std::unique_ptr<algos::OnPolicyLearner> learner = ppo(config);
        auto policy = make_policy("multi_learner",
                                  PolicyContext{config, cartpole(16, 1), *learner, torch::kCPU, communicator.get()});
        TrainingCallbacks callbacks;
        callbacks.should_stop = [&, rank] {
          if (rank == 1) {
            torch::NoGradGuard no_grad;
            learner->flat_parameters().values().add_(1e-3);
          }
          return false;
        };
        TrainingState state;
        policy->train(state, 2'000, int64_t{1} << 40, callbacks);
      } catch (const std::exception& error) {
        errors[static_cast<size_t>(rank)] = error.what();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_NE(errors[1].find("rank 1's parameters differ from rank 0's after update 1"), std::string::npos) << errors[1];
}

// Exploration counts: merged every update, every rank ends with the same table (the counts of
// all ranks' states); with merging off (merge_counts_every = 0), each rank keeps its own.
TEST(MultiLearner, CountsAreSharedAcrossRanksUnlessMergingIsOff) {
  for (const int64_t merge_every : {int64_t{1}, int64_t{0}}) {
    core::ConfigSchema schema;
    algos::declare_algorithm_keys(schema);
    declare_policy_keys(schema);
    sync::declare_sync_keys(schema);
    explore::declare_explore_keys(schema);
    schema.declare("run.seed", int64_t{1}, "seed");
    core::Config config(schema);
    for (const char* assignment : {"algo.ppo.num_steps=16", "algo.ppo.num_minibatches=1", "algo.ppo.update_epochs=1",
                                   "explore.bonus=simhash", "explore.sketch.table_size=1009"}) {
      config.apply_override(assignment);
    }
    config.set("policy.multi_learner.merge_counts_every", merge_every, "test");
    comm::ThreadGroup group(2, std::chrono::seconds(60));
    std::vector<std::unique_ptr<comm::Communicator>> communicators;
    for (int rank = 0; rank < 2; ++rank) communicators.push_back(group.communicator(rank));
    std::vector<core::Checkpoint> counts(2);
    std::vector<std::string> errors(2);
    std::vector<std::thread> threads;
    for (int rank = 0; rank < 2; ++rank) {
      threads.emplace_back([&, rank] {
        try {
          std::unique_ptr<algos::OnPolicyLearner> learner = ppo(config);
          std::unique_ptr<explore::Bonus> bonus = explore::make_bonus(config, envs::Space::box({4}, -1.0f, 1.0f));
          std::unique_ptr<Policy> policy = make_policy(
              "multi_learner", PolicyContext{config, cartpole(4, 7 + static_cast<uint64_t>(rank)), *learner,
                                             torch::kCPU, communicators[static_cast<size_t>(rank)].get(), bonus.get()});
          TrainingState state;
          policy->train(state, 3 * 16 * 8, int64_t{1} << 40, {});
          bonus->save(counts[static_cast<size_t>(rank)]);
        } catch (const std::exception& error) {
          errors[static_cast<size_t>(rank)] = error.what();
        }
      });
    }
    for (auto& thread : threads) thread.join();
    ASSERT_EQ(errors[0], "");
    ASSERT_EQ(errors[1], "");
    bool identical = true;
    int compared = 0;
    for (const auto& [name, tensor] : counts[0].tensors) {
      if (name.rfind("explore/counts/", 0) != 0) continue;
      ++compared;
      identical = identical && torch::equal(tensor, counts[1].tensors.at(name));
    }
    EXPECT_GT(compared, 0);
    EXPECT_EQ(identical, merge_every > 0) << "merge_counts_every = " << merge_every;
  }
}

}  // namespace
}  // namespace concord::policies
