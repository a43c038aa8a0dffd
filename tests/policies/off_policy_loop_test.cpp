// The off-policy loop of `single` (and so of sync_vector and multi_learner) against a counting
// environment and a learner that records what it is given: the transitions, the Gymnasium
// episode ends, the update schedule and the refusals, all exact.
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "concord/policies/policy_registry.h"
#include "concord/policies/single.h"
#include "policies/policy_fakes.h"

namespace concord::policies {
namespace {

using testing::counting_config;
using testing::counting_registry;
using testing::RecordingOffPolicyLearner;

float at(const algos::TensorMap& step, const char* field, int64_t row) {
  return step.at(field).select(0, row).reshape({-1})[0].item<float>();
}

TEST(OffPolicyLoop, UpdatesAtEveryMultipleOfTrainFrequencyBeyondLearningStarts) {
  const envs::Registry registry = counting_registry(/*terminate_after=*/0);
  envs::VectorEnv env(counting_config(2), registry);
  RecordingOffPolicyLearner learner(/*learning_starts=*/4, /*train_frequency=*/3);
  SinglePolicy policy(env, learner, torch::kCPU);
  TrainingState state;
  policy.train(state, /*total_steps=*/20, /*checkpoint_interval_steps=*/1000, {});

  EXPECT_EQ(state.global_step, 20);
  ASSERT_EQ(learner.steps.size(), 10u);  // 2 envs per step
  // Multiples of 3 beyond 4, each taken at the first step that reaches it (steps go by 2).
  EXPECT_EQ(learner.update_steps, (std::vector<int64_t>{6, 10, 12, 16, 18}));
  EXPECT_EQ(state.updates, 5);
  EXPECT_DOUBLE_EQ(learner.progresses.front(), 6.0 / 20.0);
  // The actor saw the global step before each env step, and the run's total.
  ASSERT_EQ(learner.actor_.contexts.size(), 10u);
  EXPECT_EQ(learner.actor_.contexts[3].global_step, 6);
  EXPECT_EQ(learner.actor_.contexts[3].total_steps, 20);
  EXPECT_FALSE(learner.actor_.contexts[3].deterministic);
}

TEST(OffPolicyLoop, TruncationKeepsTheFinalObservationAsNextObservation) {
  const envs::Registry registry = counting_registry(/*terminate_after=*/0);
  envs::VectorEnv env(counting_config(1), registry);
  RecordingOffPolicyLearner learner(/*learning_starts=*/100, /*train_frequency=*/1);
  SinglePolicy policy(env, learner, torch::kCPU);
  TrainingState state;
  policy.train(state, 6, 1000, {});
  ASSERT_EQ(learner.steps.size(), 6u);
  namespace f = algos::transition;
  for (int t = 0; t < 6; ++t) {
    const algos::TensorMap& step = learner.steps[t];
    const int into_episode = t % 4;  // the time limit truncates after 4 steps
    EXPECT_EQ(at(step, f::kObservations, 0), into_episode) << t;
    EXPECT_EQ(at(step, f::kNextObservations, 0), into_episode + 1) << t;
    EXPECT_EQ(at(step, f::kRewards, 0), 1.0f);
    EXPECT_EQ(at(step, f::kTerminated, 0), 0.0f);
    EXPECT_EQ(at(step, f::kTruncated, 0), t == 3 ? 1.0f : 0.0f) << t;
    EXPECT_EQ(step.at(f::kActions).scalar_type(), torch::kInt64);
  }
  EXPECT_TRUE(learner.update_steps.empty());  // learning never started
  EXPECT_EQ(state.updates, 0);
}

TEST(OffPolicyLoop, TerminationIsMarkedAndKeepsTheFinalObservation) {
  const envs::Registry registry = counting_registry(/*terminate_after=*/2);
  envs::VectorEnv env(counting_config(1), registry);
  RecordingOffPolicyLearner learner(100, 1);
  SinglePolicy policy(env, learner, torch::kCPU);
  TrainingState state;
  policy.train(state, 4, 1000, {});
  namespace f = algos::transition;
  EXPECT_EQ(at(learner.steps[1], f::kTerminated, 0), 1.0f);
  EXPECT_EQ(at(learner.steps[1], f::kTruncated, 0), 0.0f);
  EXPECT_EQ(at(learner.steps[1], f::kNextObservations, 0), 2.0f);
  EXPECT_EQ(at(learner.steps[2], f::kObservations, 0), 0.0f);  // the next episode's first
}

TEST(OffPolicyLoop, AnUpdateWithoutABatchIsNotCounted) {
  const envs::Registry registry = counting_registry(0);
  envs::VectorEnv env(counting_config(1), registry);
  // Learning "starts" at once, but the fake's replay holds a batch only after 5 steps, as after a
  // resume whose checkpoint did not keep the replay.
  RecordingOffPolicyLearner learner(/*learning_starts=*/0, /*train_frequency=*/1, /*batch_steps=*/5);
  SinglePolicy policy(env, learner, torch::kCPU);
  TrainingState state;
  int reports = 0;
  TrainingCallbacks callbacks;
  callbacks.on_update = [&](const TrainingState&, const algos::Metrics& metrics, const core::EpisodeStats&) {
    ++reports;
    EXPECT_EQ(metrics.count("charts/SPS"), 1u);
  };
  policy.train(state, 8, 1000, callbacks);
  EXPECT_EQ(learner.update_steps, (std::vector<int64_t>{5, 6, 7, 8}));
  EXPECT_EQ(state.updates, 4);
  EXPECT_EQ(reports, 4);
}

// Callbacks are bookkeeping: with gradients on, an in-place copy from the parameters in one (the
// CLI's snapshot) chained an autograd node per update until freeing them overflowed the stack.
TEST(OffPolicyLoop, CallbacksRunWithGradientsOff) {
  const envs::Registry registry = counting_registry(0);
  envs::VectorEnv env(counting_config(1), registry);
  RecordingOffPolicyLearner learner(/*learning_starts=*/0, /*train_frequency=*/1);
  SinglePolicy policy(env, learner, torch::kCPU);
  TrainingState state;
  std::vector<bool> gradients_on;
  TrainingCallbacks callbacks;
  callbacks.on_update = [&](const TrainingState&, const algos::Metrics&, const core::EpisodeStats&) {
    gradients_on.push_back(torch::GradMode::is_enabled());
  };
  callbacks.on_checkpoint = [&](const TrainingState&) { gradients_on.push_back(torch::GradMode::is_enabled()); };
  ASSERT_TRUE(torch::GradMode::is_enabled());
  policy.train(state, 4, /*checkpoint_interval_steps=*/2, callbacks);
  EXPECT_EQ(gradients_on, std::vector<bool>(6, false));  // 4 updates, checkpoints at steps 2 and 4
  EXPECT_TRUE(torch::GradMode::is_enabled());
}

TEST(OffPolicyLoop, PoliciesThatCannotRunOffPolicyRefuseInOneLine) {
  core::ConfigSchema schema;
  declare_policy_keys(schema);
  core::Config config(schema);
  RecordingOffPolicyLearner learner(0, 1);
  envs::VectorEnvConfig env_config;
  env_config.env_id = "CartPole-v1";
  env_config.num_envs = 2;
  for (const std::string name : {"actor_processes"}) {
    try {
      make_policy(name, PolicyContext{config, env_config, learner, torch::kCPU});
      FAIL() << "expected a refusal from " << name;
    } catch (const std::invalid_argument& error) {
      EXPECT_EQ(std::string(error.what()),
                "policy '" + name +
                    "' runs on-policy algorithms only, and this algorithm learns off-policy from replay; use "
                    "train.policy single, sync_vector, hogwild, central_inference, async_learner, multi_learner, apex, "
                    "seed_rl");
    }
  }
  EXPECT_NO_THROW(make_policy("single", PolicyContext{config, env_config, learner, torch::kCPU}));
}

TEST(OffPolicyLoop, RefusesAnExplorationBonus) {
  const envs::Registry registry = counting_registry(0);
  envs::VectorEnv env(counting_config(1), registry);
  RecordingOffPolicyLearner learner(0, 1);
  explore::Bonus* bonus = reinterpret_cast<explore::Bonus*>(&learner);  // never called: refused first
  EXPECT_THAT([&] { SinglePolicy policy(env, learner, torch::kCPU, bonus); },
              ::testing::ThrowsMessage<std::invalid_argument>(::testing::HasSubstr("explore.bonus = \"none\"")));
}

}  // namespace
}  // namespace concord::policies
