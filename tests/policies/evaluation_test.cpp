// evaluate_episodes against a tiny environment whose return is known exactly for a given policy.
#include "concord/policies/evaluation.h"

#include <cmath>
#include <memory>
#include <stdexcept>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

namespace concord::policies {
namespace {

// Three steps per episode; the reward is the action (discrete: 0 or 1; continuous: action[0],
// whose space is [-1, 1]), so the best policy earns 3.
class PayActionEnv final : public envs::FloatEnv {
 public:
  explicit PayActionEnv(bool continuous)
      : envs::FloatEnv(envs::EnvSpec{"PayAction", envs::Space::box({1}, -10.0f, 10.0f),
                                     continuous ? envs::Space::box({1}, -1.0f, 1.0f) : envs::Space::discrete(2), 0,
                                     std::nullopt}),
        continuous_(continuous) {}

 private:
  void reset_state(float* observation) override {
    step_ = 0;
    observation[0] = 0.0f;
  }
  envs::StepResult step_state(const envs::Action& action, float* observation) override {
    ++step_;
    observation[0] = static_cast<float>(step_);
    const float reward = continuous_ ? action.values[0] : static_cast<float>(action.index);
    return {reward, step_ >= 3, false};
  }
  bool continuous_;
  int step_ = 0;
};

envs::Registry pay_action_registry() {
  envs::Registry registry;
  registry.add("PayAction", [] { return std::make_unique<PayActionEnv>(false); });
  registry.add("PayActionContinuous", [] { return std::make_unique<PayActionEnv>(true); });
  return registry;
}

// A policy whose mode is action 1 (discrete) or a mean of 5 (continuous), whatever it observes.
nn::ActorCritic fixed_policy(bool continuous) {
  nn::ActorCriticConfig config;
  config.obs_shape = {1};
  config.action_kind = continuous ? nn::ActionKind::kContinuous : nn::ActionKind::kDiscrete;
  config.action_dim = continuous ? 1 : 2;
  nn::ActorCritic model(config);
  torch::NoGradGuard no_grad;
  model->named_parameters()["actor_head.weight"].zero_();
  model->named_parameters()["actor_head.bias"].copy_(continuous ? torch::tensor({5.0f}) : torch::tensor({0.0f, 10.0f}));
  return model;
}

envs::VectorEnvConfig env_config(const char* id) {
  envs::VectorEnvConfig config;
  config.env_id = id;
  config.num_envs = 2;    // overridden by the episode count
  config.batch_size = 1;  // overridden: evaluation steps all envs together
  return config;
}

TEST(Evaluation, OneEpisodePerEnvironmentWithTheModeAction) {
  const envs::Registry registry = pay_action_registry();
  const std::vector<double> returns =
      evaluate_episodes(fixed_policy(false), env_config("PayAction"), /*episodes=*/5, /*stochastic=*/false, registry);
  EXPECT_THAT(returns, ::testing::ElementsAre(3.0, 3.0, 3.0, 3.0, 3.0));
}

TEST(Evaluation, ContinuousActionsAreClippedToTheSpace) {
  const envs::Registry registry = pay_action_registry();
  // The mean action 5 is clipped to 1 at the environment boundary: 3 steps pay 1 each.
  const std::vector<double> returns =
      evaluate_episodes(fixed_policy(true), env_config("PayActionContinuous"), 3, false, registry);
  EXPECT_THAT(returns, ::testing::ElementsAre(3.0, 3.0, 3.0));
  EXPECT_THROW(evaluate_episodes(fixed_policy(true), env_config("PayActionContinuous"), 0, false, registry),
               std::invalid_argument);
}

TEST(Evaluation, SummaryIsMeanAndPopulationStd) {
  const ReturnSummary summary = summarize_returns({1.0, 3.0, 5.0, 7.0});
  EXPECT_DOUBLE_EQ(summary.mean, 4.0);
  EXPECT_DOUBLE_EQ(summary.std, std::sqrt(5.0));  // (9 + 1 + 1 + 9) / 4
  EXPECT_EQ(summary.count, 4);
  EXPECT_EQ(summarize_returns({}).count, 0);
}

}  // namespace
}  // namespace concord::policies
