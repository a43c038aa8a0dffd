// `central_inference` with an off-policy learner (SEED RL's arrangement on threads), against
// counting environments and a learner that records what it is given: every agent's steps reach
// the replay in order on its own stream, predictors act with the newest published parameters, the
// replay ratio is the algorithm's from both sides, misfits are refused in one line; then DQN
// learns CartPole-v1 and SAC learns Pendulum-v1 under it, to the bars they clear under `single`
// (off_policy_learn_test.cpp).
#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "learning_outcome.h"

#include "concord/algos/algorithm_registry.h"
#include "concord/core/config.h"
#include "concord/envs/registry.h"
#include "concord/policies/policy_registry.h"
#include "concord/policies/runtime/evaluation.h"
#include "policies/learning_runs.h"
#include "policies/policy_fakes.h"

namespace concord::policies {
namespace {

using testing::ApexRecordingLearner;

constexpr int kEnvsPerAgent = 2;

envs::VectorEnvConfig env_config(const std::string& id, int num_envs) {
  envs::VectorEnvConfig config;
  config.env_id = id;
  config.num_envs = num_envs;
  config.seed = 7;
  return config;
}

std::unique_ptr<Policy> central_inference(algos::Learner& learner, const envs::VectorEnvConfig& env,
                                          const std::vector<std::string>& overrides) {
  return make_policy("central_inference", PolicyContext{testing::config_with(overrides), env, learner, torch::kCPU});
}

float value(const algos::TensorMap& step, const char* field, int64_t row, int64_t column) {
  return step.at(field)[row][column].item<float>();
}

TEST(CentralInferenceReplay, EveryAgentsStepsReachTheReplayAtTheAlgorithmsReplayRatio) {
  constexpr int kAgents = 3;
  constexpr int64_t kLearningStarts = 30, kTrainFrequency = 4, kTotal = 600;
  ApexRecordingLearner learner(kLearningStarts, /*batch_steps=*/1, kTrainFrequency);
  const std::string id = testing::register_counting_env("CentralReplay");
  std::unique_ptr<Policy> policy = central_inference(
      learner, env_config(id, kEnvsPerAgent * kAgents),
      {"policy.central_inference.agents=3", "policy.central_inference.predictors=2",
       "policy.central_inference.prediction_batch=4", "policy.central_inference.wait_timeout_seconds=20"});
  TrainingState state;
  policy->train(state, kTotal, /*checkpoint_interval_steps=*/1'000'000, {});

  EXPECT_EQ(state.global_step, kTotal);
  EXPECT_EQ(learner.observed_rows.load(), kTotal);
  EXPECT_EQ(learner.overlapping_observes.load(), 0);
  std::map<int, int64_t> steps_of_stream;
  namespace f = algos::transition;
  // Instances number the envs in the order they were made (the registry made some before the
  // agents' to read the spec): agent a's are the first one's + 2a and + 2a + 1.
  float first = 1e9f;
  for (const auto& [stream, step] : learner.steps)
    first = std::min(first, step.at(f::kObservations).select(1, 1).min().item<float>());
  for (const auto& [stream, step] : learner.steps) {
    ASSERT_EQ(step.at(f::kObservations).size(0), kEnvsPerAgent);
    const int64_t k = steps_of_stream[stream]++;  // this agent's k-th step
    for (int64_t b = 0; b < kEnvsPerAgent; ++b) {
      EXPECT_EQ(value(step, f::kObservations, b, 1) - first, static_cast<float>(kEnvsPerAgent * stream + b))
          << "stream " << stream << " holds its agent's envs";
      EXPECT_EQ(value(step, f::kObservations, b, 0), static_cast<float>(k % 4)) << "stream " << stream << " step " << k;
      EXPECT_EQ(value(step, f::kNextObservations, b, 0), static_cast<float>(k % 4 + 1));
    }
  }
  ASSERT_EQ(steps_of_stream.size(), static_cast<size_t>(kAgents));

  // One copy of the acting network per predictor; every row the agents stepped was acted on by
  // one of them, every agent exploring as the algorithm's one actor does.
  ASSERT_EQ(learner.replicas.size(), 2u);
  int64_t acted_rows = 0;
  for (const ApexRecordingLearner::Replica* replica : learner.replicas) {
    for (const algos::ActingContext& context : replica->contexts) {
      EXPECT_EQ(context.actor_index, 0);
      EXPECT_EQ(context.num_actors, 1);
      EXPECT_EQ(context.total_steps, kTotal);
      EXPECT_LT(context.global_step, kTotal);
    }
    // The parameters a predictor picks up only move forward.
    for (size_t i = 1; i < replica->assigned.size(); ++i) {
      EXPECT_GT(replica->assigned[i][0].item<float>(), replica->assigned[i - 1][0].item<float>());
    }
  }
  for (const auto& [stream, steps] : steps_of_stream) acted_rows += steps * kEnvsPerAgent;
  EXPECT_EQ(acted_rows, kTotal);

  // The replay ratio, from below: the learner's u-th update waits until the agents have stored more
  // than learning_starts + (u - 1) x train_frequency steps.
  ASSERT_GT(learner.updates, 0);
  EXPECT_EQ(state.updates, learner.updates);
  for (size_t u = 0; u < learner.update_steps.size(); ++u) {
    EXPECT_GT(learner.update_steps[u], kLearningStarts + static_cast<int64_t>(u) * kTrainFrequency) << "update " << u;
  }
  // And from above: an agent starts a step only while the steps stored are below learning_starts
  // + (updates + 1) x train_frequency, and at most one step of each agent is in flight past it.
  EXPECT_GE(learner.updates, (kTotal - kLearningStarts - kAgents * kEnvsPerAgent) / kTrainFrequency - 1);
  EXPECT_LE(learner.updates, (kTotal - kLearningStarts) / kTrainFrequency);
}

TEST(CentralInferenceReplay, PredictorsActWithTheNewestPublishedParameters) {
  ApexRecordingLearner learner(/*learning_starts=*/10);
  learner.update_sleep = std::chrono::microseconds(100);
  const torch::Tensor initial = learner.flat_parameters().values().detach().clone();
  std::unique_ptr<Policy> policy =
      central_inference(learner, env_config(testing::register_counting_env("CentralReplay"), 2),
                        {"policy.central_inference.agents=2", "policy.central_inference.wait_timeout_seconds=20"});
  TrainingState state;
  policy->train(state, 300, 1'000'000, {});

  ASSERT_EQ(learner.replicas.size(), 1u);
  const ApexRecordingLearner::Replica& replica = *learner.replicas.front();
  ASSERT_FALSE(replica.assigned.empty());
  EXPECT_TRUE(replica.assigned.front().equal(initial)) << "the first batch acts with the parameters as they were";
  for (size_t i = 0; i < replica.assigned.size(); ++i) {
    // Published after every update, so the copy is the learner's parameters after all its updates
    // but one in progress (counted when update() returns, published after).
    const auto version = std::lround((replica.assigned[i] - initial)[0].item<double>());
    EXPECT_LE(version, replica.updates_at_assign[i]) << "assignment " << i;
    EXPECT_GE(version, replica.updates_at_assign[i] - 1) << "assignment " << i;
  }
  // Updates after the last batch are those of the steps in flight (one env of each of the two agents).
  // Rounded, as above: float subtraction can leave 286.99998 for 287 updates.
  EXPECT_GE(std::lround((replica.assigned.back() - initial)[0].item<double>()), learner.updates - 2)
      << "the last batches act with the learner's newest parameters";
}

TEST(CentralInferenceReplay, AnAgentsErrorStopsEveryThreadAndIsRethrownNamingIt) {
  ApexRecordingLearner learner(/*learning_starts=*/10);
  std::unique_ptr<Policy> policy =
      central_inference(learner, env_config(testing::register_counting_env("CentralReplay"), 2),
                        {"policy.central_inference.agents=2", "policy.central_inference.wait_timeout_seconds=20"});
  ASSERT_EQ(learner.replicas.size(), 1u);
  learner.replicas.front()->throw_at_call = 25;
  TrainingState state;
  try {
    policy->train(state, 100'000, 1'000'000, {});
    FAIL() << "expected the predictor's error";
  } catch (const std::runtime_error& error) {
    EXPECT_EQ(std::string(error.what()), "policy 'central_inference': predictor 0 failed: the simulator crashed");
  }
}

std::string refusal(algos::Learner& learner, const envs::VectorEnvConfig& env,
                    const std::vector<std::string>& overrides = {}) {
  try {
    central_inference(learner, env, overrides);
  } catch (const std::invalid_argument& error) {
    return error.what();
  }
  return "";
}

TEST(CentralInferenceReplay, RefusesWhatItCannotRunInOneLine) {
  const std::string id = testing::register_counting_env("CentralReplay");
  ApexRecordingLearner learner(0);
  EXPECT_EQ(refusal(learner, env_config(id, 8),
                    {"policy.central_inference.trainers=2", "policy.central_inference.dynamic_adjustment=true"}),
            "policy 'central_inference' with an off-policy learner learns from its replay on one thread; "
            "policy.central_inference.trainers, training_batch, max_policy_lag and dynamic_adjustment lay out "
            "on-policy training only (got trainers = 2, dynamic_adjustment = true)");
  EXPECT_EQ(refusal(learner, env_config(id, 6)),
            "policy 'central_inference': env.num_envs = 6 must be divisible by its 8 actors "
            "(policy.central_inference.actors)");
  envs::VectorEnvConfig threaded = env_config(id, 8);
  threaded.num_threads = 2;
  EXPECT_THAT(refusal(learner, threaded), ::testing::HasSubstr("set env.num_threads = 1 and env.batch_size = 0"));
  ApexRecordingLearner serial(0);
  serial.concurrent = false;
  EXPECT_EQ(refusal(serial, env_config(id, 8)),
            "policy 'central_inference' stores transitions while the learner updates, which this algorithm does not "
            "support; use train.policy single or sync_vector");
  ApexRecordingLearner no_replica(0);
  no_replica.replicable = false;
  EXPECT_EQ(refusal(no_replica, env_config(id, 8)),
            "policy 'central_inference' acts with copies of the learner's network, which this algorithm cannot "
            "make; use train.policy single or sync_vector");
  EXPECT_EQ(refusal(learner, env_config(id, 8)), "");
}

// ---------------------------------------------------------------------------------------------
// Learning, with off_policy_learn_test.cpp's fast settings and bars (learning_runs.h): two agents
// of one env each, one predictor.

double train_and_evaluate(const std::string& algo, const std::string& env_id, uint64_t seed) {
  std::vector<std::string> settings = algo == "dqn" ? testing::kFastDqn : testing::kFastSac;
  settings.push_back("policy.central_inference.agents=2");
  return testing::train_and_evaluate("central_inference", algo, testing::config_with(settings), env_config(env_id, 2),
                                     algo == "dqn" ? testing::kFastDqnSteps : testing::kFastSacSteps, seed);
}

TEST(CentralInferenceReplayLearning, DqnLearnsCartPole) {
  EXPECT_TRUE(test::learns([](uint64_t seed) { return train_and_evaluate("dqn", "CartPole-v1", seed); },
                           test::LearningBar{80.0}));
}

TEST(CentralInferenceReplayLearning, SacLearnsPendulum) {
  EXPECT_TRUE(test::learns([](uint64_t seed) { return train_and_evaluate("sac", "Pendulum-v1", seed); },
                           test::LearningBar{-700.0}));
}

}  // namespace
}  // namespace concord::policies
