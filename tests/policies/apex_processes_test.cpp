// The `apex` policy across ranks (apex_processes.h), the ranks as threads (comm::ThreadGroup):
// rank 0 learns, the others act. Every actor's steps reach the learner in order on its own stream,
// published parameters reach the actors, an actor's failure is named, the refusals are one line
// each, and DQN learns CartPole-v1. tests/cli/multi_process_test.cpp runs it as real processes.
#include "concord/policies/apex_processes.h"

#include <atomic>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "concord/algos/algorithm_registry.h"
#include "concord/comm/thread_group.h"
#include "concord/core/rng.h"
#include "concord/core/torch_thread.h"
#include "concord/envs/registry.h"
#include "concord/policies/policy_registry.h"
#include "concord/policies/runtime/evaluation.h"
#include "learning_outcome.h"
#include "policies/policy_fakes.h"

namespace concord::policies {
namespace {

using testing::ApexRecordingLearner;
using testing::CountingEnv;
using testing::expect_fake_priority_inputs;

// A fresh counting env id: observation [steps into the episode, instance], truncated every 4
// steps, reward 1.
std::string register_counting_env() { return testing::register_counting_env("ApexRanks"); }

envs::VectorEnvConfig env_config(const std::string& id, int num_envs, uint64_t seed = 7) {
  envs::VectorEnvConfig config;
  config.env_id = id;
  config.num_envs = num_envs;
  config.seed = seed;
  return config;
}

ApexConfig apex_config(int actors) {
  ApexConfig config;
  config.actors = actors;
  config.wait_timeout_seconds = 20.0;
  return config;
}

// Runs `body(rank, communicator)` on one thread per rank (each with its own generator, as a
// process has) and returns each rank's error ("" when none).
template <typename Body>
std::vector<std::string> run_ranks(int world_size, Body body) {
  comm::ThreadGroup group(world_size, std::chrono::seconds(30));
  std::vector<std::unique_ptr<comm::Communicator>> communicators;
  for (int rank = 0; rank < world_size; ++rank) communicators.push_back(group.communicator(rank));
  std::vector<std::string> errors(static_cast<size_t>(world_size));
  std::vector<std::thread> threads;
  for (int rank = 0; rank < world_size; ++rank) {
    threads.push_back(core::torch_thread(core::derive_seed(11, static_cast<uint64_t>(rank)), [&, rank] {
      // A rank's communicator ends with its thread, as a process's connections end with it.
      std::unique_ptr<comm::Communicator> communicator = std::move(communicators[static_cast<size_t>(rank)]);
      try {
        body(rank, *communicator);
      } catch (const std::exception& error) {
        errors[static_cast<size_t>(rank)] = error.what();
      }
    }));
  }
  for (std::thread& thread : threads) thread.join();
  return errors;
}

float value(const algos::TensorMap& step, const char* field, int64_t row, int64_t column) {
  return step.at(field)[row][column].item<float>();
}

TEST(ApexProcesses, EveryActorsStepsReachTheLearnerInOrderAndParametersReachTheActors) {
  constexpr int kActors = 2;
  constexpr int kEnvsPerActor = 2;
  constexpr int64_t kTotal = 2'000;
  const std::string id = register_counting_env();
  ApexConfig config = apex_config(kActors);
  config.publish_every = 3;
  config.refresh_every = 20;            // segments of 10 steps of an actor's 2 envs
  config.max_env_steps_per_update = 4;  // answers wait for the learner
  std::vector<std::unique_ptr<ApexRecordingLearner>> learners;
  for (int rank = 0; rank <= kActors; ++rank) learners.push_back(std::make_unique<ApexRecordingLearner>(100));
  const torch::Tensor initial = learners[0]->flat_parameters().values().detach().clone();
  TrainingState state;
  std::vector<std::unique_ptr<ApexProcessesPolicy>> policies(kActors + 1);
  const std::vector<std::string> errors = run_ranks(kActors + 1, [&](int rank, comm::Communicator& communicator) {
    policies[static_cast<size_t>(rank)] =
        std::make_unique<ApexProcessesPolicy>(config, env_config(id, kActors * kEnvsPerActor),
                                              *learners[static_cast<size_t>(rank)], torch::kCPU, communicator);
    TrainingState own;
    policies[static_cast<size_t>(rank)]->train(rank == 0 ? state : own, kTotal, 1'000'000, {});
  });
  for (const std::string& error : errors) EXPECT_EQ(error, "");

  // The learner observed whole segments of 20 env steps until it reached kTotal.
  const ApexRecordingLearner& learner = *learners[0];
  EXPECT_EQ(state.global_step, kTotal);
  EXPECT_EQ(learner.observed_rows.load(), kTotal);
  std::map<int, int64_t> steps_of_stream;
  std::map<int, float> instance_of_stream;  // of the stream's first env
  namespace f = algos::transition;
  for (const auto& [stream, step] : learner.steps) {
    ASSERT_EQ(step.at(f::kObservations).size(0), kEnvsPerActor);
    const int64_t k = steps_of_stream[stream]++;  // this actor's k-th step: none lost, none reordered
    if (k == 0) instance_of_stream[stream] = value(step, f::kObservations, 0, 1);
    for (int64_t b = 0; b < kEnvsPerActor; ++b) {
      EXPECT_EQ(value(step, f::kObservations, b, 1), instance_of_stream[stream] + static_cast<float>(b))
          << "stream " << stream << " holds its actor's envs";
      EXPECT_EQ(value(step, f::kObservations, b, 0), static_cast<float>(k % 4)) << "stream " << stream << " step " << k;
      EXPECT_EQ(value(step, f::kNextObservations, b, 0), static_cast<float>(k % 4 + 1));
      EXPECT_EQ(step.at(f::kTruncated)[b].item<float>(), k % 4 == 3 ? 1.0f : 0.0f);
    }
  }
  ASSERT_EQ(steps_of_stream.size(), static_cast<size_t>(kActors));
  for (const auto& [stream, steps] : steps_of_stream) EXPECT_EQ(steps % 10, 0) << "whole segments, stream " << stream;
  ASSERT_GT(learner.updates, 0);
  EXPECT_EQ(state.updates, learner.updates);
  EXPECT_GT(learner.update_steps.front(), 100) << "no update before learning_starts";
  // The answers waited for the learner: at most 4 steps per update once learning started, plus
  // a segment in flight from each actor and the one that crossed learning_starts.
  EXPECT_LE(kTotal - 100, 4 * learner.updates + 3 * 20 + kActors * 20);

  for (int rank = 1; rank <= kActors; ++rank) {
    const ApexRecordingLearner::Replica& replica = *learners[static_cast<size_t>(rank)]->replicas.back();
    // The actor's contexts: its place among the actors, the run's total, a global_step that grows.
    ASSERT_FALSE(replica.contexts.empty());
    int64_t previous = -1;
    for (const algos::ActingContext& context : replica.contexts) {
      EXPECT_EQ(context.actor_index, rank - 1);
      EXPECT_EQ(context.num_actors, kActors);
      EXPECT_DOUBLE_EQ(context.epsilon, std::pow(0.4, 1.0 + 7.0 * (rank - 1) / (kActors - 1)));  // Ape-X's
      EXPECT_EQ(context.total_steps, kTotal);
      EXPECT_GE(context.global_step, previous);
      previous = context.global_step;
    }
    // It acted first with the learner's parameters as they were, then with newer publications
    // only, each after a multiple of publish_every updates.
    ASSERT_FALSE(replica.assigned.empty());
    EXPECT_TRUE(replica.assigned.front().equal(initial)) << "rank " << rank;
    int64_t last = -1;
    for (const torch::Tensor& assigned : replica.assigned) {
      const torch::Tensor difference = assigned - initial;
      const auto version = static_cast<int64_t>(std::lround(difference[0].item<double>()));
      EXPECT_TRUE(torch::allclose(difference, torch::full_like(difference, static_cast<double>(version))));
      EXPECT_EQ(version % 3, 0);
      EXPECT_GT(version, last) << "only a newer publication is sent";
      EXPECT_LE(version, learner.updates);
      last = version;
    }
    EXPECT_GT(last, 0) << "rank " << rank << " received a publication after an update";
  }
}

// Replicas that compute initial priorities send them with each segment, and every observed step
// carries its own (the fake's: the step's counter + 0.5).
TEST(ApexProcesses, TheActorsInitialPrioritiesTravelWithTheirSteps) {
  const std::string id = register_counting_env();
  ApexConfig config = apex_config(2);
  config.refresh_every = 12;  // segments of 6 steps of an actor's 2 envs
  std::vector<std::unique_ptr<ApexRecordingLearner>> learners;
  for (int rank = 0; rank < 3; ++rank) {
    learners.push_back(std::make_unique<ApexRecordingLearner>(10));
    learners.back()->replica_priorities = true;
  }
  TrainingState state;
  const std::vector<std::string> errors = run_ranks(3, [&](int rank, comm::Communicator& communicator) {
    ApexProcessesPolicy policy(config, env_config(id, 4), *learners[static_cast<size_t>(rank)], torch::kCPU,
                               communicator);
    TrainingState own;
    policy.train(rank == 0 ? state : own, 480, 1'000'000, {});
  });
  for (const std::string& error : errors) EXPECT_EQ(error, "");
  EXPECT_EQ(state.global_step, 480);
  ASSERT_FALSE(learners[0]->steps.empty());
  for (const auto& [stream, step] : learners[0]->steps) {
    expect_fake_priority_inputs(step, stream);
  }
}

TEST(ApexProcesses, UnderAbortAnActorsFailureFailsTheRunNamingItsRank) {
  const std::string id = register_counting_env();
  ApexConfig config = apex_config(2);
  config.refresh_every = 4;
  config.on_actor_failure = "abort";
  std::vector<std::unique_ptr<ApexRecordingLearner>> learners;
  for (int rank = 0; rank < 3; ++rank) learners.push_back(std::make_unique<ApexRecordingLearner>(10));
  const std::vector<std::string> errors = run_ranks(3, [&](int rank, comm::Communicator& communicator) {
    ApexProcessesPolicy policy(config, env_config(id, 4), *learners[static_cast<size_t>(rank)], torch::kCPU,
                               communicator);
    if (rank == 2) learners[2]->replicas.back()->throw_at_call = 30;
    TrainingState state;
    policy.train(state, 1'000'000, 1'000'000, {});
  });
  EXPECT_EQ(errors[2], "the simulator crashed");
  EXPECT_THAT(errors[0], ::testing::StartsWith("policy 'apex': actor rank 2 failed: "));
}

// By default (on_actor_failure = "continue") an actor that fails is dropped and the other one
// takes the run to its end; the policy tells a launcher that other ranks may fail.
TEST(ApexProcesses, AFailedActorIsDroppedAndTheOtherTrainsOnToTheEnd) {
  const std::string id = register_counting_env();
  ApexConfig config = apex_config(2);
  config.refresh_every = 4;  // segments of 2 steps of an actor's 2 envs
  constexpr int64_t kTotal = 3'000;
  std::vector<std::unique_ptr<ApexRecordingLearner>> learners;
  for (int rank = 0; rank < 3; ++rank) learners.push_back(std::make_unique<ApexRecordingLearner>(10));
  TrainingState state;
  bool survives = false;
  const std::vector<std::string> errors = run_ranks(3, [&](int rank, comm::Communicator& communicator) {
    ApexProcessesPolicy policy(config, env_config(id, 4), *learners[static_cast<size_t>(rank)], torch::kCPU,
                               communicator);
    if (rank == 0) survives = policy.survives_failed_ranks();
    if (rank == 2) learners[2]->replicas.back()->throw_at_call = 30;
    TrainingState own;
    policy.train(rank == 0 ? state : own, kTotal, 1'000'000, {});
  });
  EXPECT_TRUE(survives);
  EXPECT_EQ(errors[0], "");
  EXPECT_EQ(errors[1], "");
  EXPECT_EQ(errors[2], "the simulator crashed");
  EXPECT_EQ(state.global_step, kTotal);
  // Rank 2 (stream 1) sent what it collected before its 30th act(); rank 1 (stream 0) the rest.
  std::map<int, int64_t> rows_of_stream;
  for (const auto& [stream, step] : learners[0]->steps) {
    rows_of_stream[stream] += step.at(algos::transition::kObservations).size(0);
  }
  EXPECT_LT(rows_of_stream[1], 30 * 2);
  EXPECT_EQ(rows_of_stream[0] + rows_of_stream[1], kTotal);
  EXPECT_GT(learners[0]->updates, 0);

  config.on_actor_failure = "abort";
  comm::ThreadGroup group(3, std::chrono::seconds(5));
  std::unique_ptr<comm::Communicator> communicator = group.communicator(0);
  ApexRecordingLearner learner(10);
  EXPECT_FALSE(
      ApexProcessesPolicy(config, env_config(id, 4), learner, torch::kCPU, *communicator).survives_failed_ranks());
}

TEST(ApexProcesses, RefusesWhatCannotWorkInOneLine) {
  const std::string id = register_counting_env();
  bool concurrent = true;
  const auto refusal = [&](const std::vector<std::string>& overrides, int num_envs, int world_size) {
    core::ConfigSchema schema;
    declare_policy_keys(schema);
    core::Config config(schema);
    for (const std::string& assignment : overrides) config.apply_override(assignment);
    ApexRecordingLearner learner(0);
    learner.concurrent = concurrent;
    comm::ThreadGroup group(world_size, std::chrono::seconds(5));
    std::unique_ptr<comm::Communicator> communicator = group.communicator(0);
    try {
      make_policy("apex", PolicyContext{config, env_config(id, num_envs), learner, torch::kCPU, communicator.get()});
    } catch (const std::invalid_argument& error) {
      return std::string(error.what());
    }
    return std::string();
  };
  EXPECT_EQ(refusal({}, 4, 4),
            "policy 'apex' under a launcher runs one actor on each rank after the learner (rank 0): 4 ranks make 3 "
            "actors, but policy.apex.actors = 2; set it to 3 or launch 3 ranks");
  EXPECT_EQ(refusal({"policy.apex.actors=3"}, 4, 4),
            "policy 'apex': env.num_envs = 4 must be divisible by its 3 actors (policy.apex.actors)");
  EXPECT_EQ(refusal({"policy.apex.actors=3"}, 6, 4), "");
  EXPECT_EQ(refusal({}, 4, 1), "") << "a world of one runs the actors as threads";
  EXPECT_THAT(refusal({"policy.apex.on_actor_failure=maybe"}, 4, 3),
              ::testing::HasSubstr("on_actor_failure must be \"continue\" or \"abort\", got \"maybe\""));
  // Rank 0 stores segments while it updates.
  concurrent = false;
  EXPECT_EQ(refusal({}, 4, 3),
            "policy 'apex' stores transitions while the learner updates, which this algorithm does not support; use "
            "train.policy single or sync_vector");
}

// DQN with the Ape-X epsilons of two actors, on two actor ranks with one CartPole env each,
// learns: the threads' kApexDqn settings (apex_test.cpp), segments of 50 steps (Ape-X's local
// buffer).
double train_and_evaluate(uint64_t seed) {
  const std::vector<std::string> settings = {"algo.hidden_sizes=[64, 64]",    "algo.activation=relu",
                                             "algo.dqn.learning_starts=1000", "algo.dqn.batch_size=64",
                                             "algo.dqn.learning_rate=1e-3",   "algo.dqn.target_network_frequency=250",
                                             "policy.apex.actors=2",          "policy.apex.max_env_steps_per_update=2",
                                             "policy.apex.refresh_every=50",  "policy.apex.publish_every=10"};
  core::ConfigSchema schema;
  algos::declare_algorithm_keys(schema);
  declare_policy_keys(schema);
  core::Config config(schema);
  for (const std::string& assignment : settings) config.apply_override(assignment);
  const envs::EnvSpec spec = envs::make_env("CartPole-v1", {})->spec();
  std::mutex construction;  // the global generator initialises weights: one rank at a time
  double eval_mean = 0.0;
  const std::vector<std::string> errors = run_ranks(3, [&](int rank, comm::Communicator& communicator) {
    std::unique_ptr<algos::Learner> learner;
    {
      std::lock_guard<std::mutex> lock(construction);
      torch::manual_seed(seed + static_cast<uint64_t>(rank));
      learner = algos::make_learner("dqn", config, spec.observation_space, spec.action_space);
    }
    std::unique_ptr<Policy> policy =
        make_policy("apex", PolicyContext{config, env_config("CartPole-v1", 2, seed + static_cast<uint64_t>(rank)),
                                          *learner, torch::kCPU, &communicator});
    TrainingState state;
    policy->train(state, 30'000, int64_t{1} << 40, {});
    if (rank == 0) {
      EXPECT_EQ(state.global_step, 30'000);
      EXPECT_GT(state.updates, 0);
      const std::vector<double> returns =
          runtime::evaluate_episodes(*learner, env_config("CartPole-v1", 2, 99 + seed), 10);
      eval_mean = std::accumulate(returns.begin(), returns.end(), 0.0) / static_cast<double>(returns.size());
    }
  });
  for (const std::string& error : errors) EXPECT_EQ(error, "");
  return eval_mean;
}

TEST(ApexProcessesLearning, DqnWithTwoActorRanksLearnsCartPole) {
  EXPECT_TRUE(test::learns(train_and_evaluate, test::LearningBar{80.0}));
}

}  // namespace
}  // namespace concord::policies
