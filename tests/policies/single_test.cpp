// The `single` policy's loop against a tiny counting environment and a learner that records what
// it is given, so every Rollout field can be checked exactly.
#include "concord/policies/single.h"

#include <cmath>
#include <limits>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "concord/policies/policy_registry.h"
#include "policies/learning_runs.h"
#include "policies/policy_fakes.h"

namespace concord::policies {
namespace {

using testing::counting_config;
using testing::counting_registry;
using testing::RecordingLearner;

TEST(SinglePolicy, TruncationBootstrapsFromTheFinalObservation) {
  const envs::Registry registry = counting_registry(/*terminate_after=*/0);
  envs::VectorEnv env(counting_config(2), registry);
  RecordingLearner learner(/*rollout_length=*/5);
  SinglePolicy policy(env, learner, torch::kCPU);
  TrainingState state;
  policy.train(state, /*total_steps=*/10, /*checkpoint_interval_steps=*/100, {});

  ASSERT_EQ(learner.rollouts.size(), 1u);
  const algos::Rollout& rollout = learner.rollouts[0];
  // Observations acted on: 0 1 2 3, then the auto-reset's 0.
  EXPECT_TRUE(torch::equal(rollout.observations.index({torch::indexing::Slice(), 0, 0}),
                           torch::tensor({0.0f, 1.0f, 2.0f, 3.0f, 0.0f})));
  EXPECT_TRUE(torch::equal(rollout.truncated.select(1, 1), torch::tensor({0.0f, 0.0f, 0.0f, 1.0f, 0.0f})));
  EXPECT_EQ(rollout.terminated.sum().item<float>(), 0.0f);
  EXPECT_EQ(rollout.rewards.sum().item<float>(), 10.0f);
  // The truncated step carries its episode's final observation, 4, for the learner to value;
  // every other step carries zeros.
  EXPECT_TRUE(torch::equal(rollout.final_observations.select(2, 0),
                           torch::tensor({{0.0f, 0.0f}, {0.0f, 0.0f}, {0.0f, 0.0f}, {4.0f, 4.0f}, {0.0f, 0.0f}})));
  torch::NoGradGuard no_grad;
  EXPECT_FLOAT_EQ(rollout.bootstrap_value[0].item<float>(),
                  learner.model()->value(torch::tensor({{1.0f}})).item<float>());
  // o_T, the observation the bootstrap value is of, travels with it: 1 after the reset's 0.
  EXPECT_TRUE(torch::equal(rollout.next_observations.select(1, 0), torch::tensor({1.0f, 1.0f})));
  EXPECT_EQ(state.global_step, 10);
  EXPECT_EQ(state.updates, 1);
}

TEST(SinglePolicy, TerminationIsNotBootstrapped) {
  const envs::Registry registry = counting_registry(/*terminate_after=*/2);
  envs::VectorEnv env(counting_config(1), registry);
  RecordingLearner learner(4);
  SinglePolicy policy(env, learner, torch::kCPU);
  TrainingState state;
  policy.train(state, 4, 100, {});
  const algos::Rollout& rollout = learner.rollouts.at(0);
  EXPECT_TRUE(torch::equal(rollout.terminated.select(1, 0), torch::tensor({0.0f, 1.0f, 0.0f, 1.0f})));
  EXPECT_EQ(rollout.truncated.sum().item<float>(), 0.0f);
  EXPECT_EQ(rollout.final_observations.abs().sum().item<float>(), 0.0f);
}

TEST(SinglePolicy, ProgressCheckpointsAndStop) {
  const envs::Registry registry = counting_registry(0);
  envs::VectorEnv env(counting_config(2), registry);
  RecordingLearner learner(5);  // 10 steps per update
  SinglePolicy policy(env, learner, torch::kCPU);
  TrainingState state;
  std::vector<int64_t> checkpoints;
  TrainingCallbacks callbacks;
  callbacks.on_checkpoint = [&](const TrainingState& now) { checkpoints.push_back(now.global_step); };
  callbacks.should_stop = [&] { return learner.rollouts.size() >= 7; };
  policy.train(state, /*total_steps=*/100, /*checkpoint_interval_steps=*/25, callbacks);
  EXPECT_EQ(state.updates, 7);
  EXPECT_EQ(state.global_step, 70);
  // Due at 25, 50, 75: taken at the first update at or past each (the caller saves the last).
  EXPECT_EQ(checkpoints, (std::vector<int64_t>{30, 50}));
  EXPECT_THAT(learner.progresses, ::testing::ElementsAre(0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7));
}

TEST(SinglePolicy, ARequestedCheckpointIsTakenAtTheNextUpdateEndWhateverTheStep) {
  const envs::Registry registry = counting_registry(0);
  envs::VectorEnv env(counting_config(2), registry);
  RecordingLearner learner(5);  // 10 steps per update
  SinglePolicy policy(env, learner, torch::kCPU);
  TrainingState state;
  std::vector<int64_t> checkpoints;
  int polls = 0;
  TrainingCallbacks callbacks;
  callbacks.on_checkpoint = [&](const TrainingState& now) { checkpoints.push_back(now.global_step); };
  // As train.checkpoint_interval_seconds does it, but counted in polls: one poll per update end.
  callbacks.checkpoint_requested = [&] { return ++polls == 2 || polls == 6; };
  policy.train(state, /*total_steps=*/80, /*checkpoint_interval_steps=*/50, callbacks);
  EXPECT_EQ(polls, 8) << "polled once per update";
  // Requested after updates 2 and 6; due by steps at 50.
  EXPECT_EQ(checkpoints, (std::vector<int64_t>{20, 50, 60}));
}

TEST(SinglePolicy, NanLossStopsWithAClearError) {
  const envs::Registry registry = counting_registry(0);
  envs::VectorEnv env(counting_config(1), registry);
  RecordingLearner learner(5);
  learner.nan_at_update = 2;
  SinglePolicy policy(env, learner, torch::kCPU);
  TrainingState state;
  try {
    policy.train(state, 100, 1000, {});
    FAIL() << "expected an error";
  } catch (const std::runtime_error& error) {
    EXPECT_THAT(error.what(), ::testing::HasSubstr("losses/fake became nan at update 2 (step 10)"));
  }
}

TEST(SinglePolicy, RefusesAsynchronousEnvironments) {
  const envs::Registry registry = counting_registry(0);
  envs::VectorEnvConfig config = counting_config(4);
  config.batch_size = 2;
  envs::VectorEnv env(config, registry);
  RecordingLearner learner(5);
  EXPECT_THROW(SinglePolicy(env, learner, torch::kCPU), std::invalid_argument);
  // sync_vector runs single's loop on threads, and refuses them in its own name.
  try {
    make_policy("sync_vector", PolicyContext{testing::config_with({}), config, learner, torch::kCPU});
    ADD_FAILURE() << "sync_vector accepted env.batch_size = 2";
  } catch (const std::invalid_argument& error) {
    EXPECT_THAT(error.what(), ::testing::StartsWith("policy 'sync_vector' steps all environments together"));
  }
}

}  // namespace
}  // namespace concord::policies
