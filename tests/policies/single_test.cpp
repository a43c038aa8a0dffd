// The `single` policy's loop against a tiny counting environment and a learner that records what
// it is given, so every Rollout field can be checked exactly.
#include "concord/policies/single.h"

#include <cmath>
#include <limits>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

namespace concord::policies {
namespace {

// Observation [steps into the episode]; terminates after `terminate_after` steps (0: never);
// truncated by the time limit of 4 steps. Reward 1 per step.
class CountingEnv final : public envs::FloatEnv {
 public:
  explicit CountingEnv(int terminate_after)
      : envs::FloatEnv(envs::EnvSpec{"Counting", envs::Space::box({1}, -100.0f, 100.0f), envs::Space::discrete(2), 4,
                                     std::nullopt}),
        terminate_after_(terminate_after) {}

 private:
  void reset_state(float* observation) override {
    step_ = 0;
    observation[0] = 0.0f;
  }
  envs::StepResult step_state(const envs::Action&, float* observation) override {
    ++step_;
    observation[0] = static_cast<float>(step_);
    return {1.0f, terminate_after_ > 0 && step_ >= terminate_after_, false};
  }
  int terminate_after_;
  int step_ = 0;
};

class RecordingLearner final : public algos::Learner {
 public:
  explicit RecordingLearner(int64_t rollout_length)
      : rollout_length_(rollout_length), model_([] {
          nn::ActorCriticConfig config;
          config.obs_shape = {1};
          config.action_dim = 2;
          return config;
        }()) {}

  algos::Metrics update(const algos::Rollout& rollout, double progress) override {
    algos::Rollout copy = rollout;
    copy.observations = rollout.observations.clone();
    copy.terminated = rollout.terminated.clone();
    copy.truncated = rollout.truncated.clone();
    copy.truncation_values = rollout.truncation_values.clone();
    copy.rewards = rollout.rewards.clone();
    rollouts.push_back(copy);
    progresses.push_back(progress);
    return {{"losses/fake", rollouts.size() == static_cast<size_t>(nan_at_update) ? std::nan("") : 1.0}};
  }
  nn::ActorCritic model() override { return model_; }
  int64_t rollout_length() const override { return rollout_length_; }
  nn::FlatParameters& flat_parameters() override { return parameters_; }
  int64_t gradient_steps_per_update() const override { return 1; }
  std::unique_ptr<algos::Learner> make_shared_replica() override { throw std::logic_error("not shareable"); }
  void save(core::Checkpoint&) const override {}
  void load(const core::Checkpoint&) override {}

  std::vector<algos::Rollout> rollouts;
  std::vector<double> progresses;
  int nan_at_update = -1;

 private:
  int64_t rollout_length_;
  nn::ActorCritic model_;
  nn::FlatParameters parameters_{*model_};
};

envs::VectorEnvConfig counting_config(int num_envs) {
  envs::VectorEnvConfig config;
  config.env_id = "Counting";
  config.num_envs = num_envs;
  return config;
}

envs::Registry counting_registry(int terminate_after) {
  envs::Registry registry;
  registry.add("Counting", [terminate_after] { return std::make_unique<CountingEnv>(terminate_after); });
  return registry;
}

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
  // The truncated step's bootstrap value is V(final observation = 4), nothing elsewhere.
  torch::NoGradGuard no_grad;
  const float expected = learner.model()->value(torch::tensor({{4.0f}})).item<float>();
  EXPECT_FLOAT_EQ(rollout.truncation_values[3][0].item<float>(), expected);
  EXPECT_EQ(rollout.truncation_values.abs().sum().item<float>(), 2.0f * std::abs(expected));
  EXPECT_FLOAT_EQ(rollout.bootstrap_value[0].item<float>(),
                  learner.model()->value(torch::tensor({{1.0f}})).item<float>());
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
  EXPECT_EQ(rollout.truncation_values.abs().sum().item<float>(), 0.0f);
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
}

}  // namespace
}  // namespace concord::policies
