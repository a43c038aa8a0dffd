// One update of each learner whose MLP networks run fused (nn::fused_linear_stack, one autograd
// node per torso and head) against the same update through the composed modules
// (set_fused(false)): from the same parameters, batch and random draws, the parameters after the
// update and its losses agree to float32 rounding. PPO and A2C for separate and shared torsos,
// tanh and relu, discrete and continuous actions; SAC's actor and twin critics.

#include <ATen/ops/rand.h>
#include <ATen/ops/randint.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/zeros.h>
#include <c10/core/GradMode.h>
#include <gtest/gtest.h>
#include <torch/utils.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>

#include "algos/pendulum_fixture.h"
#include "concord/algos/a2c.h"
#include "concord/algos/experience.h"
#include "concord/algos/ppo.h"
#include "concord/algos/sac.h"

namespace concord::algos {
namespace {

using Layout = std::tuple<bool, std::string, nn::ActionKind>;  // shared torso, activation, actions

nn::ActorCriticConfig network(const Layout& layout) {
  const auto& [shared, activation, kind] = layout;
  nn::ActorCriticConfig config;
  config.obs_shape = {4};
  config.action_kind = kind;
  config.action_dim = 2;
  config.shared_torso = shared;
  config.activation = activation;
  return config;
}

// A rollout of T steps of B envs acted by `learner`'s current policy, with behaviour
// log-probabilities a little off it, so that PPO's ratios clip.
Rollout random_rollout(OnPolicyLearner& learner, int64_t steps, int64_t envs) {
  const bool discrete = learner.model()->config().action_kind == nn::ActionKind::kDiscrete;
  Rollout rollout;
  rollout.observations = at::randn({steps, envs, 4});
  rollout.actions = discrete ? at::randint(0, 2, {steps, envs}, at::kLong) : at::randn({steps, envs, 2});
  rollout.rewards = at::randn({steps, envs});
  rollout.terminated = (at::rand({steps, envs}) < 0.1).to(at::kFloat);
  rollout.truncated = at::zeros({steps, envs});
  rollout.final_observations = at::zeros_like(rollout.observations);
  c10::NoGradGuard no_grad;
  const nn::ActionEvaluation acted =
      learner.model()->evaluate(rollout.observations.flatten(0, 1), rollout.actions.flatten(0, 1));
  rollout.log_probs = (acted.log_prob + at::randn({steps * envs}) * 0.3).reshape({steps, envs});
  rollout.values = acted.value.reshape({steps, envs});
  rollout.bootstrap_value = at::randn({envs});
  return rollout;
}

double largest_difference(const at::Tensor& a, const at::Tensor& b) { return (a - b).abs().max().item<double>(); }

// The two updates' metrics (losses and diagnostics) agree to float32 rounding.
void expect_same_metrics(const Metrics& fused, const Metrics& composed) {
  ASSERT_EQ(fused.size(), composed.size());
  for (const auto& [name, value] : composed) {
    ASSERT_EQ(fused.count(name), 1U) << name;
    EXPECT_NEAR(fused.at(name), value, 1e-5 * std::max(1.0, std::abs(value))) << name;
  }
}

// Builds two learners from the same seed, the second composed, runs `update` on each from the
// same rollout and seed, and compares parameters and metrics.
template <typename Learner, typename Config>
void expect_one_update_matches(const Config& config, int64_t envs) {
  torch::manual_seed(31);
  Learner fused(config);
  torch::manual_seed(31);
  Learner composed(config);
  composed.model()->set_fused(false);
  ASSERT_TRUE(fused.flat_parameters().values().equal(composed.flat_parameters().values()));
  torch::manual_seed(32);
  const Rollout rollout = random_rollout(fused, config.num_steps, envs);

  torch::manual_seed(33);
  const Metrics fused_metrics = fused.update(rollout, 0.25);
  torch::manual_seed(33);
  const Metrics composed_metrics = composed.update(rollout, 0.25);

  const at::Tensor after = composed.flat_parameters().values();
  EXPECT_LT(largest_difference(fused.flat_parameters().values(), after), 1e-5);
  expect_same_metrics(fused_metrics, composed_metrics);
  // The update moved the parameters far more than that.
  torch::manual_seed(31);
  Learner initial(config);
  EXPECT_GT(largest_difference(initial.flat_parameters().values(), after), 1e-4);
}

class FusedOnPolicyUpdate : public ::testing::TestWithParam<Layout> {};

TEST_P(FusedOnPolicyUpdate, PpoMatchesTheComposedNetworks) {
  PpoConfig config;
  config.network = network(GetParam());
  config.num_steps = 16;
  expect_one_update_matches<Ppo>(config, 4);
}

TEST_P(FusedOnPolicyUpdate, A2cMatchesTheComposedNetworks) {
  A2cConfig config;
  config.network = network(GetParam());
  config.num_steps = 5;
  expect_one_update_matches<A2c>(config, 8);
}

INSTANTIATE_TEST_SUITE_P(AllMlpLayouts, FusedOnPolicyUpdate,
                         ::testing::Combine(::testing::Bool(), ::testing::Values("tanh", "relu"),
                                            ::testing::Values(nn::ActionKind::kDiscrete, nn::ActionKind::kContinuous)));

class FusedSacUpdate : public ::testing::TestWithParam<std::string> {};

// Two gradient steps (critics, actor and alpha at each, targets mixed after each) on batches of
// 32, from the same replay, parameters and noise.
TEST_P(FusedSacUpdate, MatchesTheComposedNetworks) {
  SacConfig config = test_util::small_pendulum_sac_config();
  config.batch_size = 32;
  config.policy_frequency = 1;
  config.network.hidden_sizes = {32, 32};
  config.network.activation = GetParam();
  torch::manual_seed(41);
  Sac fused(config);
  torch::manual_seed(41);
  Sac composed(config);
  composed.model()->actor->set_fused(false);
  composed.model()->qf1->set_fused(false);
  composed.model()->qf2->set_fused(false);
  composed.targets()->qf1->set_fused(false);
  composed.targets()->qf2->set_fused(false);
  ASSERT_TRUE(fused.flat_parameters().values().equal(composed.flat_parameters().values()));
  torch::manual_seed(42);
  const TensorMap transitions = test_util::random_pendulum_transitions(48);
  fused.observe(transitions);
  composed.observe(transitions);

  Metrics fused_metrics;
  Metrics composed_metrics;
  for (int64_t step = 11; step < 13; ++step) {
    torch::manual_seed(43 + step);
    fused_metrics = fused.update(step, 0.0);
    torch::manual_seed(43 + step);
    composed_metrics = composed.update(step, 0.0);
  }
  const at::Tensor after = composed.flat_parameters().values();
  EXPECT_LT(largest_difference(fused.flat_parameters().values(), after), 1e-5);
  EXPECT_LT(largest_difference(fused.targets()->qf1->parameters()[0], composed.targets()->qf1->parameters()[0]), 1e-5);
  expect_same_metrics(fused_metrics, composed_metrics);
  torch::manual_seed(41);
  Sac initial(config);
  EXPECT_GT(largest_difference(initial.flat_parameters().values(), after), 1e-4);
}

INSTANTIATE_TEST_SUITE_P(BothActivations, FusedSacUpdate, ::testing::Values("relu", "tanh"));

}  // namespace
}  // namespace concord::algos
