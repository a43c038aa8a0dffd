// evaluate_episodes against a tiny environment whose return is known exactly for a given policy.
#include "concord/policies/runtime/evaluation.h"

#include <cmath>
#include <memory>
#include <stdexcept>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

namespace concord::policies {
namespace {

// Three steps per episode, or no end at all when `endless` (and no time limit either); the reward
// is the action (discrete: 0 or 1; continuous: action[0], whose space is [-1, 1]), so the best
// policy earns 3 (1 a step when endless).
class PayActionEnv final : public envs::FloatEnv {
 public:
  explicit PayActionEnv(bool continuous, bool endless = false)
      : envs::FloatEnv(envs::EnvSpec{"PayAction", envs::Space::box({1}, -1e9f, 1e9f),
                                     continuous ? envs::Space::box({1}, -1.0f, 1.0f) : envs::Space::discrete(2), 0,
                                     std::nullopt}),
        continuous_(continuous),
        endless_(endless) {}

 private:
  void reset_state(float* observation) override {
    step_ = 0;
    observation[0] = 0.0f;
  }
  envs::StepResult step_state(const envs::Action& action, float* observation) override {
    ++step_;
    observation[0] = static_cast<float>(step_);
    const float reward = continuous_ ? action.values[0] : static_cast<float>(action.index);
    return {reward, !endless_ && step_ >= 3, false};
  }
  bool continuous_;
  bool endless_;
  int step_ = 0;
};

envs::Registry pay_action_registry() {
  envs::Registry registry;
  registry.add("PayAction", [] { return std::make_unique<PayActionEnv>(false); });
  registry.add("PayActionContinuous", [] { return std::make_unique<PayActionEnv>(true); });
  registry.add("Endless", [] { return std::make_unique<PayActionEnv>(false, /*endless=*/true); });
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
  const std::vector<double> returns = runtime::evaluate_episodes(fixed_policy(false), env_config("PayAction"),
                                                                 /*episodes=*/5, /*stochastic=*/false, registry);
  EXPECT_THAT(returns, ::testing::ElementsAre(3.0, 3.0, 3.0, 3.0, 3.0));
}

TEST(Evaluation, ContinuousActionsAreClippedToTheSpace) {
  const envs::Registry registry = pay_action_registry();
  // The mean action 5 is clipped to 1 at the environment boundary: 3 steps pay 1 each.
  const std::vector<double> returns =
      runtime::evaluate_episodes(fixed_policy(true), env_config("PayActionContinuous"), 3, false, registry);
  EXPECT_THAT(returns, ::testing::ElementsAre(3.0, 3.0, 3.0));
  EXPECT_THROW(runtime::evaluate_episodes(fixed_policy(true), env_config("PayActionContinuous"), 0, false, registry),
               std::invalid_argument);
}

// An episode that never ends would stall an evaluation: where the env has no time limit,
// evaluation imposes one and counts the episodes it cut.
TEST(Evaluation, AnEnvWithoutATimeLimitIsCutAtTheStepLimit) {
  const envs::Registry registry = pay_action_registry();
  const runtime::Evaluation cut =
      runtime::evaluate(fixed_policy(false), env_config("Endless"), 3, false, /*step_limit=*/40, registry);
  EXPECT_THAT(cut.returns, ::testing::ElementsAre(40.0, 40.0, 40.0));
  EXPECT_EQ(cut.cut_at_limit, 3);
  EXPECT_EQ(cut.step_limit, 40);

  // A limit the run set (env.max_episode_steps) is the env's own: evaluation adds none.
  envs::VectorEnvConfig limited = env_config("Endless");
  limited.options.max_episode_steps = 10;
  const runtime::Evaluation own = runtime::evaluate(fixed_policy(false), limited, 2, false, 40, registry);
  EXPECT_THAT(own.returns, ::testing::ElementsAre(10.0, 10.0));
  EXPECT_EQ(own.cut_at_limit, 0);
  EXPECT_EQ(own.step_limit, 0);

  // Episodes that end before the limit are not counted as cut.
  const runtime::Evaluation ended =
      runtime::evaluate(fixed_policy(false), env_config("PayAction"), 2, false, 40, registry);
  EXPECT_THAT(ended.returns, ::testing::ElementsAre(3.0, 3.0));
  EXPECT_EQ(ended.cut_at_limit, 0);

  EXPECT_THROW(runtime::evaluate(fixed_policy(false), env_config("Endless"), 2, false, 0, registry),
               std::invalid_argument);
}

TEST(Evaluation, SummaryIsMeanAndPopulationStd) {
  const runtime::ReturnSummary summary = runtime::summarize_returns({1.0, 3.0, 5.0, 7.0});
  EXPECT_DOUBLE_EQ(summary.mean, 4.0);
  EXPECT_DOUBLE_EQ(summary.std, std::sqrt(5.0));  // (9 + 1 + 1 + 9) / 4
  EXPECT_EQ(summary.count, 4);
  EXPECT_EQ(runtime::summarize_returns({}).count, 0);
}

}  // namespace
}  // namespace concord::policies
