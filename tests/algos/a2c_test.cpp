#include "concord/algos/a2c.h"

#include <ATen/Context.h>
#include <ATen/ops/allclose.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/rand.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/zeros.h>
#include <c10/core/GradMode.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "concord/algos/returns.h"
#include "concord/algos/reward_scaler.h"
#include "concord/core/checkpoint.h"

#include "algos/tensor_test_util.h"

namespace concord::algos {
namespace {

using namespace test_util;

// CartPole-shaped: 4-dim observations, 2 actions, 5-step rollouts.
A2cConfig small_config(const std::string& optimizer = "rmsprop") {
  A2cConfig config;
  config.optimizer = optimizer;
  config.network = cartpole_network();
  return config;
}

// T x B random steps (see test_util::random_rollout), a termination at t = 1 of column 0 and a
// truncation at t = 3 of the last column.
Rollout synthetic_rollout(nn::ActorCritic& model, int64_t steps, int64_t envs) {
  return test_util::random_rollout(model, steps, envs, /*terminated_at=*/1, /*truncated_at=*/3);
}

// Two samples:
//   policy_loss = -mean(A * log pi) = -mean(2 * -0.5, -1 * -2) = -mean(-1, 2) = -0.5
//   value_loss  = mean((R - V)^2)   = mean((3 - 1)^2, (1 - 0)^2) = (4 + 1) / 2 = 2.5
//   entropy     = mean(0.7, 0.3)    = 0.5
//   loss = -0.5 + 0.5 * 2.5 - 0.01 * 0.5 = 0.745
TEST(A2cLossTest, HandWorkedBatch) {
  const at::Tensor log_probs = vec({-0.5f, -2.0f}).requires_grad_(true);
  const at::Tensor advantages = vec({2.0f, -1.0f}).requires_grad_(true);
  const at::Tensor values = vec({1.0f, 0.0f}).requires_grad_(true);
  const A2cLoss loss = a2c_loss(log_probs, advantages, values, vec({3.0f, 1.0f}), vec({0.7f, 0.3f}),
                                /*ent_coef=*/0.01, /*vf_coef=*/0.5);
  EXPECT_NEAR(loss.policy_loss.item<double>(), -0.5, kTol);
  EXPECT_NEAR(loss.value_loss.item<double>(), 2.5, kTol);
  EXPECT_NEAR(loss.entropy.item<double>(), 0.5, kTol);
  EXPECT_NEAR(loss.loss.item<double>(), 0.745, kTol);

  // d loss / d log pi = -A / N = [-1, 0.5]; d loss / d V = vf_coef * -2 (R - V) / N = [-1, -0.5];
  // advantages are constants.
  loss.loss.backward();
  EXPECT_NEAR(log_probs.grad()[0].item<double>(), -1.0, kTol);
  EXPECT_NEAR(log_probs.grad()[1].item<double>(), 0.5, kTol);
  EXPECT_NEAR(values.grad()[0].item<double>(), -1.0, kTol);
  EXPECT_NEAR(values.grad()[1].item<double>(), -0.5, kTol);
  EXPECT_FALSE(advantages.grad().defined());
}

TEST(A2cConfigTest, ValidationPrintsEveryBadValue) {
  A2cConfig config = small_config("sgd");
  config.num_steps = 0;
  config.max_grad_norm = 0.0;
  expect_invalid_argument([&] { A2c a2c(config); }, {"optimizer=\"sgd\"", "num_steps=0", "max_grad_norm=0"});
}

// The reported losses are those of the model before its step, on n-step returns bootstrapped
// from the critic's V(final observation): recompute them from the pieces.
TEST(A2cTest, UpdateUsesNStepReturnsAndReportsMetrics) {
  for (const std::string optimizer : {"rmsprop", "adam"}) {
    SCOPED_TRACE(optimizer);
    at::manual_seed(1);
    A2c a2c(small_config(optimizer));
    nn::ActorCritic model = a2c.model();
    const Rollout rollout = synthetic_rollout(model, 5, 3);

    at::Tensor expected_value_loss;
    at::Tensor expected_policy_loss;
    {
      c10::NoGradGuard no_grad;
      const at::Tensor returns = n_step_returns(rollout.rewards, rollout.terminated, rollout.truncated, rollout.values,
                                                rollout.bootstrap_value, test_util::final_values(model, rollout), 0.99);
      const nn::ActionEvaluation eval =
          model->evaluate(rollout.observations.flatten(0, 1), rollout.actions.flatten(0, 1));
      expected_value_loss = (returns.reshape(-1) - eval.value).square().mean();
      expected_policy_loss = -((returns - rollout.values).reshape(-1) * eval.log_prob).mean();
    }
    const std::vector<at::Tensor> before = parameter_copies(model);

    const Metrics metrics = a2c.update(rollout, 0.0);
    EXPECT_NEAR(metrics.at("losses/value_loss"), expected_value_loss.item<double>(), kTol);
    EXPECT_NEAR(metrics.at("losses/policy_loss"), expected_policy_loss.item<double>(), kTol);
    EXPECT_DOUBLE_EQ(metrics.at("charts/learning_rate"), 7e-4);
    EXPECT_EQ(metrics.size(), 5u);
    for (const auto& [name, value] : metrics) EXPECT_TRUE(std::isfinite(value)) << name;

    bool changed = false;
    const std::vector<at::Tensor> after = model->parameters();
    for (size_t i = 0; i < before.size(); ++i) changed = changed || !before[i].equal(after[i]);
    EXPECT_TRUE(changed);
    EXPECT_EQ(a2c.updates(), 1);
  }
}

// A truncated step bootstraps from the learner's critic evaluating the episode's final
// observation, and only truncated steps' final observations are evaluated: NaN elsewhere changes
// nothing. Moving the final observation moves the update, with and without V-trace.
TEST(A2cTest, TruncationBootstrapsFromTheLearnersValueOfTheFinalObservation) {
  for (const bool vtrace : {false, true}) {
    SCOPED_TRACE(vtrace ? "vtrace" : "n-step");
    A2cConfig config = small_config();
    config.vtrace = vtrace;
    at::manual_seed(11);
    A2c reference(config);
    at::manual_seed(11);
    A2c with_nans(config);
    at::manual_seed(11);
    A2c moved(config);
    nn::ActorCritic model = reference.model();
    const Rollout rollout = synthetic_rollout(model, 5, 3);

    Rollout nans = rollout;
    nans.final_observations = rollout.final_observations.clone();
    const at::Tensor not_truncated = rollout.truncated.logical_not().unsqueeze(-1).expand_as(nans.final_observations);
    nans.final_observations.masked_fill_(not_truncated, std::numeric_limits<float>::quiet_NaN());
    Rollout shifted = rollout;
    shifted.final_observations = rollout.final_observations + 1.0;

    const Metrics expected = reference.update(rollout, 0.0);
    const Metrics got = with_nans.update(nans, 0.0);
    for (const auto& [name, value] : expected) EXPECT_DOUBLE_EQ(got.at(name), value) << name;
    EXPECT_TRUE(reference.flat_parameters().values().equal(with_nans.flat_parameters().values()));
    EXPECT_NE(moved.update(shifted, 0.0).at("losses/value_loss"), expected.at("losses/value_loss"));
  }
}

TEST(A2cTest, AnnealsWhenAsked) {
  at::manual_seed(2);
  A2cConfig config = small_config();
  config.anneal_lr = true;
  A2c a2c(config);
  nn::ActorCritic model = a2c.model();
  EXPECT_DOUBLE_EQ(a2c.update(synthetic_rollout(model, 5, 2), 0.5).at("charts/learning_rate"), 3.5e-4);
  EXPECT_THROW(a2c.update(synthetic_rollout(model, 4, 2), 0.0), std::invalid_argument);
}

// On-policy (log-probs and values of the rollout from the current model, rho_bar = c_bar = 1),
// V-trace's targets are the n-step returns and its advantages return - V: the same update.
TEST(A2cVtraceTest, OnPolicyBatchGivesTheSameUpdateAsNStepReturns) {
  A2cConfig plain_config = small_config();
  A2cConfig vtrace_config = plain_config;
  vtrace_config.vtrace = true;
  at::manual_seed(3);
  A2c plain(plain_config);
  at::manual_seed(3);
  A2c corrected(vtrace_config);
  nn::ActorCritic model = plain.model();
  const Rollout rollout = synthetic_rollout(model, 5, 3);

  const Metrics plain_metrics = plain.update(rollout, 0.0);
  const Metrics vtrace_metrics = corrected.update(rollout, 0.0);
  for (const auto& [name, value] : plain_metrics) EXPECT_NEAR(vtrace_metrics.at(name), value, 1e-5) << name;
  EXPECT_TRUE(at::allclose(plain.flat_parameters().values(), corrected.flat_parameters().values(), 1e-5, 1e-7));
}

// One step, pi / mu = 0.5 (the behaviour policy made the action twice as likely), reward 1,
// gamma 0.99, V = V(o_0) and V' = V(o_1) of the current critic (the rollout's own bootstrap value,
// the acting critic's, is ignored):
//   rho = min(1, 0.5) = 0.5;  delta = 0.5 * (1 + 0.99 * V' - V)
//   v_0 = V + delta           -> value_loss  = (v_0 - V)^2 = delta^2
//   pg_advantage = delta      -> policy_loss = -delta * log pi(a_0 | o_0)
TEST(A2cVtraceTest, OffPolicyTargetsAreImportanceWeighted) {
  A2cConfig config = small_config();
  config.num_steps = 1;
  config.vtrace = true;
  at::manual_seed(4);
  A2c a2c(config);
  nn::ActorCritic model = a2c.model();
  Rollout rollout = test_util::random_rollout(model, 1, 1, /*terminated_at=*/0, /*truncated_at=*/0);
  rollout.terminated.zero_();
  rollout.truncated.zero_();
  rollout.final_observations.zero_();
  rollout.rewards.fill_(1.0);
  rollout.bootstrap_value.fill_(0.5);
  rollout.log_probs = rollout.log_probs + std::log(2.0);

  double value = 0.0;
  double next_value = 0.0;
  double log_pi = 0.0;
  {
    c10::NoGradGuard no_grad;
    const nn::ActionEvaluation eval =
        model->evaluate(rollout.observations.flatten(0, 1), rollout.actions.flatten(0, 1));
    value = eval.value.item<double>();
    log_pi = eval.log_prob.item<double>();
    next_value = model->value(rollout.next_observations).item<double>();
  }
  ASSERT_NE(next_value, 0.5);
  const double delta = 0.5 * (1.0 + 0.99 * next_value - value);
  const Metrics metrics = a2c.update(rollout, 0.0);
  EXPECT_NEAR(metrics.at("losses/value_loss"), delta * delta, 1e-5);
  EXPECT_NEAR(metrics.at("losses/policy_loss"), -delta * log_pi, 1e-5);
}

// A rollout acted by an older critic carries that critic's V(o_T) as its bootstrap_value. Under
// V-trace the learner bootstraps from its own critic, as IMPALA's learner does, so the update is
// the one whose bootstrap is the current V(o_T), whatever the acting critic said; without o_T the
// given bootstrap is all there is, and a stale one changes the update.
TEST(A2cVtraceTest, BootstrapsFromItsOwnCritic) {
  A2cConfig config = small_config();
  config.vtrace = true;
  std::vector<std::unique_ptr<A2c>> learners;
  for (int i = 0; i < 3; ++i) {
    at::manual_seed(5);
    learners.push_back(std::make_unique<A2c>(config));
  }
  nn::ActorCritic model = learners[0]->model();
  Rollout stale = synthetic_rollout(model, 5, 3);
  Rollout current = stale;
  {
    c10::NoGradGuard no_grad;
    current.bootstrap_value = model->value(stale.next_observations);
  }
  current.next_observations = at::Tensor();
  stale.bootstrap_value = stale.bootstrap_value + 10.0;
  Rollout stale_without_next = stale;
  stale_without_next.next_observations = at::Tensor();

  const Metrics from_own_critic = learners[0]->update(stale, 0.0);
  const Metrics from_current = learners[1]->update(current, 0.0);
  const Metrics from_stale = learners[2]->update(stale_without_next, 0.0);
  for (const auto& [name, value] : from_current) EXPECT_EQ(from_own_critic.at(name), value) << name;
  EXPECT_TRUE(learners[0]->flat_parameters().values().equal(learners[1]->flat_parameters().values()));
  EXPECT_NE(from_stale.at("losses/value_loss"), from_current.at("losses/value_loss"));
  EXPECT_FALSE(learners[2]->flat_parameters().values().equal(learners[1]->flat_parameters().values()));
}

TEST(A2cVtraceTest, NeedsLambdaOne) {
  A2cConfig config = small_config();
  config.vtrace = true;
  config.gae_lambda = 0.95;
  try {
    config.validate();
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("gae_lambda=0.95 must be 1 when vtrace is on"), std::string::npos)
        << error.what();
  }
}

TEST(A2cCheckpointTest, SaveLoadRestoresParametersAndOptimiserState) {
  at::manual_seed(3);
  A2c original(small_config());
  nn::ActorCritic original_model = original.model();
  original.update(synthetic_rollout(original_model, 5, 2), 0.0);
  core::Checkpoint checkpoint;
  original.save(checkpoint);
  EXPECT_EQ(checkpoint.metadata["algorithm"], "a2c");
  EXPECT_EQ(checkpoint.metadata["updates"], 1);

  at::manual_seed(4);
  A2c restored(small_config());
  nn::ActorCritic restored_model = restored.model();
  restored.load(checkpoint);
  EXPECT_TRUE(same_parameters(original_model, restored_model));
  EXPECT_EQ(restored.updates(), 1);

  // RMSprop's square averages must have come along for the next steps to agree.
  const Rollout next = synthetic_rollout(original_model, 5, 2);
  original.update(next, 0.0);
  restored.update(next, 0.0);
  EXPECT_TRUE(same_parameters(original_model, restored_model));

  core::Checkpoint missing = checkpoint;
  missing.tensors.erase("model/actor_torso.fc0.weight");
  try {
    restored.load(missing);
    FAIL() << "expected core::CheckpointError";
  } catch (const core::CheckpointError& error) {
    EXPECT_EQ(error.kind(), core::CheckpointError::Kind::kTensorMissing);
    EXPECT_NE(std::string(error.what()).find("model/actor_torso.fc0.weight"), std::string::npos) << error.what();
  }
}

// A2C with both normalisations is A2C without them, handed rewards scaled by a RewardScaler and
// a model whose inputs are normalised: the rewards are scaled before the returns, and the
// observation statistics take in each rollout only after the gradient step.
TEST(A2cNormalizationTest, ScalesRewardsFirstAndUpdatesObservationStatisticsLast) {
  A2cConfig normalised_config = small_config();
  normalised_config.normalize_reward = true;
  normalised_config.network.normalize_observations = true;
  at::manual_seed(6);
  A2c normalised(normalised_config);
  at::manual_seed(6);
  A2c plain(small_config());
  nn::ActorCritic normalised_model = normalised.model();
  nn::ActorCritic plain_model = plain.model();

  RewardScaler by_hand(RewardScalerConfig{small_config().gamma});
  for (int update = 0; update < 2; ++update) {
    const Rollout rollout = test_util::random_rollout(normalised_model, 5, 4, 1, 3, /*obs_scale=*/5.0,
                                                      /*obs_shift=*/3.0);
    // The plain learner sees what the normalised one computes from: normalised observations (by
    // the statistics before this update) and scaled rewards.
    Rollout prepared = rollout;
    prepared.observations = normalised_model->observation_stats()->normalize(rollout.observations);
    prepared.final_observations = normalised_model->observation_stats()->normalize(rollout.final_observations);
    prepared.rewards = by_hand.scale(rollout.rewards, rollout.terminated, rollout.truncated);
    normalised.update(rollout, 0.0);
    plain.update(prepared, 0.0);
    const std::vector<at::Tensor> a = normalised_model->parameters();
    const std::vector<at::Tensor> b = plain_model->parameters();
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(a[i].allclose(b[i], 1e-5, 1e-6)) << "update " << update;
    EXPECT_NEAR(normalised_model->observation_stats()->count(), 20.0 * (update + 1) + 1e-4, 1e-9);
  }

  core::Checkpoint checkpoint;
  normalised.save(checkpoint);
  EXPECT_EQ(checkpoint.tensors.count("model/obs_rms.mean"), 1u);
  EXPECT_EQ(checkpoint.tensors.count("reward_scaler/returns"), 1u);
  A2c restored(normalised_config);
  restored.load(checkpoint);
  EXPECT_TRUE(restored.model()->observation_stats()->var().equal(normalised_model->observation_stats()->var()));
}

// The one-step bandit of ppo_test.cpp: action 1 pays 1. A2C's single step per update is slower
// than PPO's 16, so it gets more updates.
TEST(A2cLearning, SolvesATwoArmedBandit) {
  at::manual_seed(5);
  A2cConfig config = small_config();
  config.num_steps = 1;
  A2c a2c(config);
  nn::ActorCritic model = a2c.model();
  const at::Tensor obs = at::ones({1, 16, 4});
  const auto p_action_1 = [&]() {
    c10::NoGradGuard no_grad;
    return model->forward(obs[0][0].unsqueeze(0)).logits.softmax(-1)[0][1].item<double>();
  };
  int updates = 0;
  for (; updates < 400 && p_action_1() <= 0.9; ++updates) {
    Rollout rollout;
    {
      c10::NoGradGuard no_grad;
      const nn::ActResult act = model->act(obs.flatten(0, 1));
      rollout.observations = obs;
      rollout.actions = act.action.reshape({1, 16});
      rollout.log_probs = act.log_prob.reshape({1, 16});
      rollout.values = act.value.reshape({1, 16});
      rollout.rewards = rollout.actions.to(at::kFloat);
      rollout.terminated = at::ones({1, 16});
      rollout.truncated = at::zeros({1, 16});
      rollout.bootstrap_value = model->value(obs[0]);
    }
    a2c.update(rollout, 0.0);
  }
  RecordProperty("updates", updates);
  EXPECT_GT(p_action_1(), 0.9) << "after " << updates << " updates";
}

}  // namespace
}  // namespace concord::algos
