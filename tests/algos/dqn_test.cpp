#include "concord/algos/dqn.h"

#include <ATen/ops/cat.h>
#include <ATen/ops/randint.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/zeros.h>
#include <c10/core/GradMode.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/optim/adam.h>
#include <torch/utils.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "concord/algos/algorithm_registry.h"
#include "concord/algos/n_step_returns.h"
#include "concord/core/checkpoint.h"

namespace concord::algos {
namespace {

// A network with no hidden layer: Q(o) = W o + b on 2-dimensional observations, 2 actions.
DqnConfig tiny_config() {
  DqnConfig config;
  config.network.obs_shape = {2};
  config.network.action_dim = 2;
  config.network.hidden_sizes = {};
  config.learning_starts = 0;
  config.batch_size = 2;
  config.buffer_size = 16;
  config.learning_rate = 0.01;
  return config;
}

void set_head(nn::QNetwork network, const std::vector<float>& weight, const std::vector<float>& bias) {
  torch::NoGradGuard no_grad;
  auto parameters = network->named_parameters();
  parameters["head.weight"].copy_(at::tensor(weight).view({2, 2}));
  parameters["head.bias"].copy_(at::tensor(bias));
}

at::Tensor matrix(const std::vector<float>& values, int64_t rows) {
  return at::tensor(values).view({rows, static_cast<int64_t>(values.size()) / rows});
}

// One step of B environments, every field of experience.h's transition.
TensorMap step(const at::Tensor& observations, std::vector<int64_t> actions, std::vector<float> rewards,
               std::vector<float> terminated, std::vector<float> truncated, const at::Tensor& next_observations) {
  return {{transition::kObservations, observations},       {transition::kActions, at::tensor(actions, at::kLong)},
          {transition::kRewards, at::tensor(rewards)},     {transition::kTerminated, at::tensor(terminated)},
          {transition::kTruncated, at::tensor(truncated)}, {transition::kNextObservations, next_observations}};
}

// `count` one-env transitions with random observations and rewards.
void fill(Dqn& dqn, int count) {
  for (int i = 0; i < count; ++i) {
    dqn.observe(step(at::randn({1, 2}), {i % 2}, {static_cast<float>(i % 3)}, {i % 5 == 4 ? 1.0f : 0.0f}, {0.0f},
                     at::randn({1, 2})));
  }
}

TensorMap replay_fields(const Dqn& dqn) {
  TensorMap fields;
  for (const auto& [name, tensor] : dqn.replay()->state()) {
    if (name.rfind("fields/", 0) == 0) fields[name.substr(7)] = tensor;
  }
  return fields;
}

bool same_parameters(const torch::nn::Module& a, const torch::nn::Module& b) {
  const auto pa = a.named_parameters();
  const auto pb = b.named_parameters();
  if (pa.size() != pb.size()) return false;
  for (const auto& p : pa) {
    if (!p.value().equal(pb[p.key()])) return false;
  }
  return true;
}

// Every parameter of `module`, flattened into one new tensor in parameters() order.
at::Tensor flat_copy(const torch::nn::Module& module) {
  std::vector<at::Tensor> parts;
  for (const auto& parameter : module.parameters()) parts.push_back(parameter.detach().flatten());
  return at::cat(parts);
}

// ---- targets ----

// The sample batch of the target tests: s'_1 = (1, 0), s'_2 = (0, 1).
TensorMap target_batch(std::vector<float> discounts) {
  return {{replay_field::kReturn, at::tensor({1.0f, 0.5f})},
          {replay_field::kDiscount, at::tensor(discounts)},
          {replay_field::kBootstrapObservation, matrix({1, 0, 0, 1}, 2)}};
}

TEST(DqnTest, VanillaTargetIsReturnPlusDiscountedTargetMax) {
  torch::manual_seed(0);
  Dqn dqn(tiny_config());
  // Q_target(s'_1) = (1, 3), Q_target(s'_2) = (2, -1); the online network must not matter.
  set_head(dqn.target_network(), {1, 2, 3, -1}, {0, 0});
  set_head(dqn.online_network(), {5, 0, 0, 5}, {0, 0});
  const at::Tensor y = dqn.td_targets(target_batch({0.99f, 0.5f}));
  EXPECT_FLOAT_EQ(y[0].item<float>(), 1.0f + 0.99f * 3.0f);
  EXPECT_FLOAT_EQ(y[1].item<float>(), 0.5f + 0.5f * 2.0f);
  // A termination (discount 0) leaves the return alone.
  EXPECT_FLOAT_EQ(dqn.td_targets(target_batch({0.99f, 0.0f}))[1].item<float>(), 0.5f);
}

TEST(DqnTest, DoubleDqnTargetLetsTheOnlineNetworkChooseAndTheTargetEvaluate) {
  torch::manual_seed(0);
  DqnConfig config = tiny_config();
  config.double_dqn = true;
  Dqn dqn(config);
  set_head(dqn.target_network(), {1, 2, 3, -1}, {0, 0});
  // Online Q(s'_1) = (5, 0) picks a* = 0, Q(s'_2) = (0, 5) picks a* = 1: the target's smaller values.
  set_head(dqn.online_network(), {5, 0, 0, 5}, {0, 0});
  const at::Tensor y = dqn.td_targets(target_batch({0.99f, 0.5f}));
  EXPECT_FLOAT_EQ(y[0].item<float>(), 1.0f + 0.99f * 1.0f);
  EXPECT_FLOAT_EQ(y[1].item<float>(), 0.5f + 0.5f * -1.0f);
}

TEST(DqnTest, NStepTransitionsFromAStreamWithATruncationAndATermination) {
  torch::manual_seed(0);
  DqnConfig config = tiny_config();
  config.n_step = 3;
  config.gamma = 0.5;
  Dqn dqn(config);
  // o_t = (t, 0); r_t = 2^t. Episode 1 is truncated after step 2 (final observation (9, 9)),
  // episode 2 terminates after step 4 (final observation (7, 7)), episode 3 runs on.
  auto o = [](float t) { return matrix({t, 0}, 1); };
  dqn.observe(step(o(0), {0}, {1}, {0}, {0}, o(1)));
  dqn.observe(step(o(1), {1}, {2}, {0}, {0}, o(2)));
  EXPECT_EQ(dqn.replay()->size(), 0);  // windows not complete
  dqn.observe(step(o(2), {0}, {4}, {0}, {1}, matrix({9, 9}, 1)));
  EXPECT_EQ(dqn.replay()->size(), 3);  // the truncation ends every window
  dqn.observe(step(o(3), {1}, {8}, {0}, {0}, o(4)));
  dqn.observe(step(o(4), {0}, {16}, {1}, {0}, matrix({7, 7}, 1)));
  dqn.observe(step(o(5), {1}, {32}, {0}, {0}, o(6)));
  dqn.observe(step(o(6), {0}, {64}, {0}, {0}, o(7)));
  dqn.observe(step(o(7), {1}, {128}, {0}, {0}, o(8)));  // t = 5's window is full

  const TensorMap fields = replay_fields(dqn);
  ASSERT_EQ(fields.at(replay_field::kReturn).size(0), 6);
  const std::vector<float> returns{1 + 0.5f * 2 + 0.25f * 4,    2 + 0.5f * 4, 4, 8 + 0.5f * 16, 16,
                                   32 + 0.5f * 64 + 0.25f * 128};
  const std::vector<float> discounts{0.125f, 0.25f, 0.5f, 0.0f, 0.0f, 0.125f};
  const std::vector<std::vector<float>> bootstrap{{9, 9}, {9, 9}, {9, 9}, {7, 7}, {7, 7}, {8, 0}};
  const std::vector<int64_t> actions{0, 1, 0, 1, 0, 1};
  for (int64_t i = 0; i < 6; ++i) {
    SCOPED_TRACE("t = " + std::to_string(i));
    EXPECT_EQ(fields.at(replay_field::kObservation)[i][0].item<float>(), static_cast<float>(i));
    EXPECT_EQ(fields.at(replay_field::kAction)[i].item<int64_t>(), actions[i]);
    EXPECT_EQ(fields.at(replay_field::kReturn)[i].item<float>(), returns[i]);
    EXPECT_EQ(fields.at(replay_field::kDiscount)[i].item<float>(), discounts[i]);
    EXPECT_EQ(fields.at(replay_field::kBootstrapObservation)[i][0].item<float>(), bootstrap[i][0]);
    EXPECT_EQ(fields.at(replay_field::kBootstrapObservation)[i][1].item<float>(), bootstrap[i][1]);
  }

  // The targets of those transitions: Q_target(o) = (o_0 + o_1, o_0 - o_1), so max = o_0 + |o_1|.
  set_head(dqn.target_network(), {1, 1, 1, -1}, {0, 0});
  const at::Tensor y = dqn.td_targets(fields);
  const std::vector<float> q_max{18, 18, 18, 14, 14, 8};
  for (int64_t i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(y[i].item<float>(), returns[i] + discounts[i] * q_max[i]) << i;
}

TEST(DqnTest, OneStepTransitionsAreWhatAnNStepQueueOfOneGives) {
  torch::manual_seed(3);
  Dqn dqn(tiny_config());
  std::vector<NStepQueue> queues(3, NStepQueue(1, 0.99));
  std::vector<NStepTransition> expected;
  for (int t = 0; t < 5; ++t) {
    const at::Tensor o = at::randn({3, 2});
    const at::Tensor next = at::randn({3, 2});
    const std::vector<float> rewards{0.1f * t, -1.7f, 3.3f};
    const std::vector<float> terminated{t == 2 ? 1.0f : 0.0f, 0, t == 4 ? 1.0f : 0.0f};
    const std::vector<float> truncated{0, t == 1 ? 1.0f : 0.0f, t == 4 ? 1.0f : 0.0f};
    const std::vector<int64_t> actions{t % 2, 1, 0};
    dqn.observe(step(o, actions, rewards, terminated, truncated, next));
    for (int b = 0; b < 3; ++b) {
      for (auto& done :
           queues[b].push(o[b], at::tensor(actions[b]), rewards[b], terminated[b] != 0, truncated[b] != 0, next[b])) {
        expected.push_back(done);
      }
    }
  }
  const TensorMap fields = replay_fields(dqn);
  ASSERT_EQ(fields.at(replay_field::kReturn).size(0), static_cast<int64_t>(expected.size()));
  for (size_t i = 0; i < expected.size(); ++i) {
    const auto row = static_cast<int64_t>(i);
    EXPECT_TRUE(fields.at(replay_field::kObservation)[row].equal(expected[i].observation)) << i;
    EXPECT_EQ(fields.at(replay_field::kAction)[row].item<int64_t>(), expected[i].action.item<int64_t>()) << i;
    EXPECT_EQ(fields.at(replay_field::kReturn)[row].item<float>(), static_cast<float>(expected[i].reward)) << i;
    EXPECT_EQ(fields.at(replay_field::kDiscount)[row].item<float>(), static_cast<float>(expected[i].discount)) << i;
    EXPECT_TRUE(fields.at(replay_field::kBootstrapObservation)[row].equal(expected[i].bootstrap_observation)) << i;
  }
}

TEST(DqnTest, ByteObservationsStayBytesInTheReplay) {
  DqnConfig config = tiny_config();
  config.network.obs_shape = {3, 3, 2};
  config.network.torso = "grid_cnn";
  config.network.hidden_sizes = nn::ActorCriticConfig().hidden_sizes;  // the mlp's, unused here
  config.network.grid_channels = {2};
  config.network.grid_kernel_size = 2;
  config.network.grid_features = 4;
  Dqn dqn(config);
  const at::Tensor o = at::randint(2, {2, 3, 3, 2}, at::kByte);
  dqn.observe(step(o, {0, 1}, {0, 1}, {0, 0}, {0, 0}, o));
  EXPECT_EQ(replay_fields(dqn).at(replay_field::kObservation).scalar_type(), at::kByte);
  EXPECT_EQ(dqn.actor().act(o, {}).actions.sizes(), (std::vector<int64_t>{2}));
}

// ---- the update ----

TEST(DqnTest, AGradientStepMovesQTowardTheTarget) {
  for (const char* loss : {"mse", "huber"}) {
    SCOPED_TRACE(loss);
    torch::manual_seed(0);
    DqnConfig config = tiny_config();
    config.batch_size = 1;
    config.loss = loss;
    config.learning_rate = 0.05;
    Dqn dqn(config);
    // One transition: o = (1, 2), a = 1, r = 1, non-terminal, o' = (0, 1).
    const TensorMap only = step(matrix({1, 2}, 1), {1}, {1}, {0}, {0}, matrix({0, 1}, 1));
    dqn.observe(only);
    set_head(dqn.online_network(), {0, 0, 0, 0}, {0, 0});
    set_head(dqn.target_network(), {1, 0, 0, 1}, {0, 0});
    const TensorMap batch = replay_fields(dqn);
    const float y = dqn.td_targets(batch)[0].item<float>();
    EXPECT_FLOAT_EQ(y, 1.0f + 0.99f * 1.0f);

    const Metrics metrics = dqn.update(/*global_step=*/1, /*progress=*/0.5);
    // The metrics describe the step taken from Q(o, a) = 0.
    EXPECT_DOUBLE_EQ(metrics.at("losses/q_values"), 0.0);
    const double error = y;
    const double expected_loss = std::string(loss) == "mse" ? error * error : error - 0.5;  // smooth L1, |e| > 1
    EXPECT_NEAR(metrics.at("losses/td_loss"), expected_loss, 1e-6);
    EXPECT_DOUBLE_EQ(metrics.at("charts/learning_rate"), 0.05);
    EXPECT_EQ(dqn.updates(), 1);

    torch::NoGradGuard no_grad;
    const at::Tensor q = dqn.online_network()->forward(matrix({1, 2}, 1));
    EXPECT_GT(q[0][1].item<float>(), 0.0f);
    EXPECT_LT(q[0][1].item<float>(), y);
    EXPECT_EQ(q[0][0].item<float>(), 0.0f);                      // the other action's row of the head did not move
    EXPECT_FLOAT_EQ(dqn.td_targets(batch)[0].item<float>(), y);  // nor did the target network
  }
}

// hogwild's asynchronous Q-learning: the replica's update is one step on exactly what it queued.
TEST(DqnTest, ASharedReplicaTakesOneStepOnExactlyItsQueuedTransitionsInTheSharedParameters) {
  torch::manual_seed(0);
  DqnConfig config = tiny_config();
  config.learning_starts = 100000;  // no replay to fill: the replica learns at once
  Dqn primary(config);
  set_head(primary.online_network(), {0, 0, 0, 0}, {0, 0});
  set_head(primary.target_network(), {1, 0, 0, 1}, {0, 0});
  std::unique_ptr<OffPolicyLearner> replica = primary.make_shared_replica();
  ASSERT_NE(replica, nullptr);
  EXPECT_EQ(replica->flat_parameters().values().data_ptr(), primary.flat_parameters().values().data_ptr());
  EXPECT_TRUE(replica->update(1, 0.0).empty());  // nothing queued

  // Three transitions, the second terminal: y = r + 0.99 max_a' Q_target(o', a') = 1 + 0.99 * 2,
  // 2 (terminal), 0 + 0.99 * 3; Q_online = 0, so the mean squared error is their mean square.
  replica->observe(step(matrix({1, 0}, 1), {0}, {1}, {0}, {0}, matrix({2, 1}, 1)));
  replica->observe(step(matrix({0, 1}, 1), {1}, {2}, {1}, {0}, matrix({5, 5}, 1)));
  replica->observe(step(matrix({1, 1}, 1), {1}, {0}, {0}, {0}, matrix({1, 3}, 1)));
  const double y1 = 1 + 0.99 * 2, y2 = 2, y3 = 0.99 * 3;
  const at::Tensor before = primary.flat_parameters().values().clone();
  const Metrics metrics = replica->update(/*global_step=*/1000, /*progress=*/0.1);
  EXPECT_NEAR(metrics.at("losses/td_loss"), (y1 * y1 + y2 * y2 + y3 * y3) / 3.0, 1e-5);
  EXPECT_DOUBLE_EQ(metrics.at("losses/q_values"), 0.0);
  EXPECT_FALSE(primary.flat_parameters().values().equal(before));  // the primary's parameters moved
  EXPECT_EQ(primary.updates(), 1);
  // The shared target followed at step 1000 (a multiple of target_network_frequency, 500).
  EXPECT_EQ(primary.target_sync_step(), 1000);
  EXPECT_TRUE(same_parameters(*primary.online_network(), *primary.target_network()));
  EXPECT_TRUE(replica->update(1001, 0.1).empty());  // each transition is learned from once

  // A3C's final epsilons: 0.1, 0.01 or 0.5.
  const double epsilon = replica->actor().exploration(ActingContext{false, -1, 0, 0, 1}).at("charts/epsilon");
  EXPECT_TRUE(epsilon == 0.1 || epsilon == 0.01 || epsilon == 0.5) << epsilon;

  DqnConfig prioritized = config;
  prioritized.prioritized = true;
  Dqn with_priorities(prioritized);
  EXPECT_THAT(
      [&] { with_priorities.make_shared_replica(); },
      ::testing::ThrowsMessage<std::invalid_argument>(::testing::HasSubstr("set algo.dqn.prioritized = false")));
}

TEST(DqnTest, UpdateDoesNothingUntilTheReplayHoldsABatch) {
  torch::manual_seed(0);
  DqnConfig config = tiny_config();
  config.batch_size = 4;
  Dqn dqn(config);
  EXPECT_TRUE(dqn.update(1000, 0.5).empty());  // no replay yet
  fill(dqn, 3);
  const at::Tensor before = dqn.flat_parameters().values().clone();
  EXPECT_TRUE(dqn.update(1000, 0.5).empty());
  EXPECT_TRUE(dqn.flat_parameters().values().equal(before));
  EXPECT_EQ(dqn.updates(), 0);
  EXPECT_EQ(dqn.target_sync_step(), 0);
  fill(dqn, 1);
  EXPECT_FALSE(dqn.update(1000, 0.5).empty());
  EXPECT_EQ(dqn.target_sync_step(), 1000);
}

TEST(DqnTest, HardTargetSyncHappensAtMultiplesOfTheTargetFrequency) {
  torch::manual_seed(0);
  DqnConfig config = tiny_config();
  config.target_network_frequency = 100;
  Dqn dqn(config);
  fill(dqn, 8);
  dqn.update(50, 0.1);
  EXPECT_FALSE(same_parameters(*dqn.online_network(), *dqn.target_network()));
  dqn.update(100, 0.2);
  EXPECT_TRUE(same_parameters(*dqn.online_network(), *dqn.target_network()));
  EXPECT_EQ(dqn.target_sync_step(), 100);
  dqn.update(150, 0.3);
  EXPECT_FALSE(same_parameters(*dqn.online_network(), *dqn.target_network()));
  dqn.update(199, 0.3);
  EXPECT_FALSE(same_parameters(*dqn.online_network(), *dqn.target_network()));
  dqn.update(340, 0.4);  // 200 and 300 were passed: one catch-up sync
  EXPECT_TRUE(same_parameters(*dqn.online_network(), *dqn.target_network()));
  EXPECT_EQ(dqn.target_sync_step(), 300);
}

TEST(DqnTest, FirstTargetSyncComesAfterLearningStarts) {
  torch::manual_seed(0);
  DqnConfig config = tiny_config();
  config.learning_starts = 1000;  // as dqn.py: 10000 with a period of 500 syncs first at 10500
  config.target_network_frequency = 500;
  Dqn dqn(config);
  EXPECT_EQ(dqn.target_sync_step(), 1000);
  fill(dqn, 4);
  dqn.update(1010, 0.1);
  EXPECT_FALSE(same_parameters(*dqn.online_network(), *dqn.target_network()));
  dqn.update(1500, 0.2);
  EXPECT_TRUE(same_parameters(*dqn.online_network(), *dqn.target_network()));
}

TEST(DqnTest, SoftTargetUpdateMixesByTau) {
  torch::manual_seed(0);
  DqnConfig config = tiny_config();
  config.target_network_frequency = 10;
  config.tau = 0.25;
  Dqn dqn(config);
  fill(dqn, 8);
  dqn.update(5, 0.1);
  const at::Tensor target_before = flat_copy(*dqn.target_network());
  dqn.update(10, 0.2);
  const at::Tensor online = dqn.flat_parameters().values().detach();
  EXPECT_TRUE(flat_copy(*dqn.target_network()).equal(0.25 * online + 0.75 * target_before));
}

TEST(DqnTest, PrioritizedReplayUpdatesPrioritiesAndReportsBeta) {
  torch::manual_seed(0);
  DqnConfig config = tiny_config();
  config.prioritized = true;
  config.batch_size = 4;
  Dqn dqn(config);
  fill(dqn, 8);
  for (int64_t i = 0; i < 8; ++i) EXPECT_EQ(dqn.replay()->priority(i), 1.0);
  const Metrics metrics = dqn.update(100, 0.5);
  EXPECT_DOUBLE_EQ(metrics.at("charts/beta"), 0.4 + 0.6 * 0.5);
  int changed = 0;
  for (int64_t i = 0; i < 8; ++i) changed += dqn.replay()->priority(i) != 1.0;
  EXPECT_GE(changed, 1);
  EXPECT_LE(changed, 4);
  EXPECT_TRUE(std::isfinite(metrics.at("losses/td_loss")));
}

TEST(DqnTest, ReportsCleanRLsMetrics) {
  torch::manual_seed(0);
  DqnConfig config = tiny_config();
  config.exploration_fraction = 0.5;
  Dqn dqn(config);
  fill(dqn, 4);
  const Metrics metrics = dqn.update(250, 0.25);  // total 1000: duration 500, halfway
  EXPECT_EQ(metrics.count("losses/td_loss"), 1u);
  EXPECT_EQ(metrics.count("losses/q_values"), 1u);
  EXPECT_EQ(metrics.count("charts/beta"), 0u);
  // Epsilon is the actor's, at the context the policy gives it: halfway through the decay.
  EXPECT_EQ(metrics.count("charts/epsilon"), 0u);
  const Metrics exploration = dqn.actor().exploration(ActingContext{false, 250, 1000, 0, 1});
  ASSERT_EQ(exploration.size(), 1u);
  EXPECT_NEAR(exploration.at("charts/epsilon"), 1.0 - 0.95 * 0.5, 1e-12);
  // An actor the policy gives its own epsilon (Ape-X's) reports it, whatever the step.
  EXPECT_NEAR(dqn.make_actor_replica()->exploration(ActingContext{false, 250, 1000, 3, 8, 0.0256}).at("charts/epsilon"),
              0.0256, 1e-12);
}

// ---- acting ----

ActingContext at_step(int64_t global_step, int64_t total_steps) {
  ActingContext context;
  context.global_step = global_step;
  context.total_steps = total_steps;
  return context;
}

TEST(DqnTest, EpsilonFollowsCleanRLsLinearSchedule) {
  const DqnConfig config;  // start 1, end 0.05, fraction 0.5
  const double slope = (0.05 - 1.0) / 500.0;
  EXPECT_DOUBLE_EQ(dqn_epsilon(config, at_step(0, 1000)), 1.0);
  EXPECT_DOUBLE_EQ(dqn_epsilon(config, at_step(250, 1000)), slope * 250 + 1.0);
  // At the end of the decay, dqn.py's max(slope * t + start_e, end_e) to the last bit.
  EXPECT_EQ(dqn_epsilon(config, at_step(500, 1000)), std::max(slope * 500 + 1.0, 0.05));
  EXPECT_NEAR(dqn_epsilon(config, at_step(500, 1000)), 0.05, 1e-15);
  EXPECT_EQ(dqn_epsilon(config, at_step(900, 1000)), 0.05);
  DqnConfig absolute = config;
  absolute.exploration_steps = 100;
  EXPECT_DOUBLE_EQ(dqn_epsilon(absolute, at_step(50, 1000)), (0.05 - 1.0) / 100.0 * 50 + 1.0);
}

TEST(DqnTest, EpsilonFollowsMinAtarsScheduleAfterLearningStarts) {
  DqnConfig config;
  config.decay_after_learning_starts = true;
  config.learning_starts = 5000;
  config.exploration_steps = 100000;
  config.end_e = 0.1;
  EXPECT_EQ(dqn_epsilon(config, at_step(0, 5000000)), 1.0);
  EXPECT_EQ(dqn_epsilon(config, at_step(4999, 5000000)), 1.0);
  EXPECT_DOUBLE_EQ(dqn_epsilon(config, at_step(5000, 5000000)), 1.0);
  EXPECT_DOUBLE_EQ(dqn_epsilon(config, at_step(55000, 5000000)), ((0.1 - 1.0) / 100000) * 50000 + 1.0);
  EXPECT_DOUBLE_EQ(dqn_epsilon(config, at_step(105000, 5000000)), 0.1);
}

// A policy's epsilon for an actor (Ape-X's) replaces the schedule, except when acting greedily.
TEST(DqnTest, AnEpsilonThePolicyAssignsReplacesTheSchedule) {
  const DqnConfig config;
  ActingContext context = at_step(123, 1000);
  context.epsilon = 0.0256;
  EXPECT_DOUBLE_EQ(dqn_epsilon(config, context), 0.0256);
  context.epsilon = 0.0;
  EXPECT_DOUBLE_EQ(dqn_epsilon(config, context), 0.0);
  context.deterministic = true;
  context.epsilon = 0.5;
  EXPECT_DOUBLE_EQ(dqn_epsilon(config, context), 0.0);
}

TEST(DqnTest, EpsilonIsZeroWhenDeterministicAndEndEAfterTraining) {
  const DqnConfig config;
  ActingContext context = at_step(0, 1000);
  context.deterministic = true;
  EXPECT_EQ(dqn_epsilon(config, context), 0.0);
  EXPECT_EQ(dqn_epsilon(config, at_step(-1, 0)), 0.05);
}

TEST(DqnTest, ActorIsGreedyWhenDeterministicAndExploresAtEpsilon) {
  torch::manual_seed(0);
  DqnConfig config = tiny_config();
  config.end_e = 0.5;
  config.start_e = 0.5;
  Dqn dqn(config);
  set_head(dqn.online_network(), {0, 0, 0, 0}, {1, 0});  // action 0 is greedy everywhere
  const at::Tensor o = at::randn({4000, 2});
  ActingContext greedy;
  greedy.deterministic = true;
  EXPECT_EQ(dqn.actor().act(o, greedy).actions.sum().item<int64_t>(), 0);
  // epsilon 0.5: a random action half the time, action 1 a quarter of the time.
  const ActorOutput out = dqn.actor().act(o, at_step(10, 100));
  EXPECT_EQ(out.actions.scalar_type(), at::kLong);
  EXPECT_TRUE(out.extras.empty());
  EXPECT_NEAR(out.actions.to(at::kDouble).mean().item<double>(), 0.25, 0.03);
  // MinAtar's random acting before learning starts: epsilon 1.
  DqnConfig minatar = config;
  minatar.decay_after_learning_starts = true;
  minatar.learning_starts = 100;
  Dqn random(minatar);
  set_head(random.online_network(), {0, 0, 0, 0}, {1, 0});
  EXPECT_NEAR(random.actor().act(o, at_step(10, 1000)).actions.to(at::kDouble).mean().item<double>(), 0.5, 0.03);
}

// ---- checkpoints ----

TEST(DqnTest, SaveLoadRoundTripRestoresNetworksOptimiserCountersAndReplay) {
  torch::manual_seed(0);
  DqnConfig config = tiny_config();
  config.checkpoint_replay = true;
  config.prioritized = true;
  config.target_network_frequency = 10;
  Dqn trained(config);
  fill(trained, 8);
  trained.update(5, 0.1);
  trained.update(12, 0.2);
  trained.update(15, 0.3);
  core::Checkpoint checkpoint;
  trained.save(checkpoint);
  EXPECT_EQ(checkpoint.metadata["algorithm"], "dqn");
  EXPECT_EQ(checkpoint.tensors.count("replay/fields/observation"), 1u);

  // Through a file, as a resumed run reads it.
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("dqn_test_" + std::to_string(::getpid()) + ".ckpt");
  core::save_checkpoint(path, checkpoint);
  const core::Checkpoint from_disk = core::load_checkpoint(path);
  std::filesystem::remove(path);

  torch::manual_seed(1);
  Dqn restored(config);
  restored.load(from_disk);
  EXPECT_TRUE(same_parameters(*restored.online_network(), *trained.online_network()));
  EXPECT_TRUE(same_parameters(*restored.target_network(), *trained.target_network()));
  const at::Tensor o = at::randn({5, 2});
  EXPECT_TRUE(restored.online_network()->forward(o).equal(trained.online_network()->forward(o)));
  EXPECT_EQ(restored.updates(), 3);
  EXPECT_EQ(restored.target_sync_step(), 10);
  // Adam's state (keyed by parameter address, so compared field by field).
  ASSERT_EQ(restored.optimizer().state().size(), 1u);
  ASSERT_EQ(trained.optimizer().state().size(), 1u);
  const auto& expected_adam =
      static_cast<const torch::optim::AdamParamState&>(*trained.optimizer().state().begin()->second);
  const auto& restored_adam =
      static_cast<const torch::optim::AdamParamState&>(*restored.optimizer().state().begin()->second);
  EXPECT_EQ(restored_adam.step(), 3);
  EXPECT_EQ(restored_adam.step(), expected_adam.step());
  EXPECT_TRUE(restored_adam.exp_avg().equal(expected_adam.exp_avg()));
  EXPECT_TRUE(restored_adam.exp_avg_sq().equal(expected_adam.exp_avg_sq()));
  ASSERT_NE(restored.replay(), nullptr);
  EXPECT_EQ(restored.replay()->num_added(), 8);
  for (const auto& [name, tensor] : trained.replay()->state()) {
    EXPECT_TRUE(restored.replay()->state().at(name).equal(tensor)) << name;
  }
}

TEST(DqnTest, WithoutCheckpointReplayAResumeStartsWithAnEmptyReplay) {
  torch::manual_seed(0);
  Dqn trained(tiny_config());
  fill(trained, 4);
  trained.update(5, 0.1);
  core::Checkpoint checkpoint;
  trained.save(checkpoint);
  for (const auto& entry : checkpoint.tensors) EXPECT_NE(entry.first.rfind("replay/", 0), 0u) << entry.first;
  Dqn restored(tiny_config());
  fill(restored, 4);
  restored.load(checkpoint);
  EXPECT_EQ(restored.replay(), nullptr);
  EXPECT_TRUE(restored.update(20, 0.2).empty());
}

TEST(DqnTest, LoadRefusesOtherCheckpointsAndChangesNothing) {
  torch::manual_seed(0);
  Dqn dqn(tiny_config());
  const at::Tensor before = dqn.flat_parameters().values().clone();

  core::Checkpoint ppo;  // what an actor-critic learner writes
  ppo.metadata["algorithm"] = "ppo";
  ppo.metadata["updates"] = 3;
  ppo.tensors["model/actor_head.weight"] = at::zeros({2, 64});
  ppo.tensors["optimizer"] = at::zeros({8}, at::kByte);
  try {
    dqn.load(ppo);
    FAIL() << "expected core::CheckpointError";
  } catch (const core::CheckpointError& error) {
    EXPECT_NE(std::string(error.what()).find("\"ppo\""), std::string::npos) << error.what();
  }

  core::Checkpoint good;
  dqn.save(good);
  core::Checkpoint no_target = good;
  no_target.tensors.erase("target/head.bias");
  EXPECT_THROW(dqn.load(no_target), core::CheckpointError);
  core::Checkpoint bad_optimizer = good;
  bad_optimizer.tensors["optimizer"] = at::zeros({8}, at::kByte);
  EXPECT_THROW(dqn.load(bad_optimizer), core::CheckpointError);
  core::Checkpoint stray = good;
  stray.tensors["model/value_head.weight"] = at::zeros({1, 2});
  EXPECT_THROW(dqn.load(stray), core::CheckpointError);

  DqnConfig dueling = tiny_config();
  dueling.dueling = true;
  Dqn other(dueling);
  try {
    other.load(good);
    FAIL() << "expected core::CheckpointError";
  } catch (const core::CheckpointError& error) {
    EXPECT_NE(std::string(error.what()).find("dueling"), std::string::npos) << error.what();
  }
  EXPECT_TRUE(dqn.flat_parameters().values().equal(before));
}

// ---- config ----

TEST(DqnTest, RefusesContinuousActionsInOneLine) {
  DqnConfig config = tiny_config();
  config.network.action_kind = nn::ActionKind::kContinuous;
  try {
    Dqn dqn(config);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("discrete action space"), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

TEST(DqnTest, ValidateListsEveryBadValue) {
  DqnConfig config = tiny_config();
  config.gamma = 1.5;
  config.optimizer = "sgd";
  config.n_step = 0;
  try {
    config.validate();
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("gamma=1.5"), std::string::npos) << message;
    EXPECT_NE(message.find("optimizer=\"sgd\""), std::string::npos) << message;
    EXPECT_NE(message.find("n_step=0"), std::string::npos) << message;
  }
}

TEST(DqnTest, ObserveRefusesMalformedSteps) {
  Dqn dqn(tiny_config());
  TensorMap missing = step(matrix({0, 0}, 1), {0}, {0}, {0}, {0}, matrix({0, 0}, 1));
  missing.erase(transition::kTruncated);
  EXPECT_THROW(dqn.observe(missing), std::invalid_argument);
  TensorMap float_actions = step(matrix({0, 0}, 1), {0}, {0}, {0}, {0}, matrix({0, 0}, 1));
  float_actions[transition::kActions] = at::zeros({1});
  EXPECT_THROW(dqn.observe(float_actions), std::invalid_argument);
  EXPECT_THROW(dqn.observe(step(matrix({0, 0}, 1), {2}, {0}, {0}, {0}, matrix({0, 0}, 1))), std::invalid_argument);
  EXPECT_THROW(dqn.observe(step(matrix({0, 0, 0}, 1), {0}, {0}, {0}, {0}, matrix({0, 0, 0}, 1))),
               std::invalid_argument);
}

TEST(DqnTest, RmspropAsMinAtarAndTheRegistryBuildIt) {
  core::ConfigSchema schema;
  declare_algorithm_keys(schema);
  core::Config config(std::move(schema));
  config.apply_override("algo.dqn.optimizer=rmsprop");
  config.apply_override("algo.dqn.loss=huber");
  config.apply_override("algo.hidden_sizes=[8]");
  const std::unique_ptr<Learner> learner =
      make_learner("dqn", config, envs::Space::box({4}, -1.0f, 1.0f), envs::Space::discrete(2));
  auto* dqn = dynamic_cast<Dqn*>(learner.get());
  ASSERT_NE(dqn, nullptr);
  EXPECT_EQ(dqn->config().optimizer, "rmsprop");
  EXPECT_TRUE(dqn->config().rmsprop_centered);
  EXPECT_DOUBLE_EQ(dqn->config().rmsprop_alpha, 0.95);
  EXPECT_DOUBLE_EQ(dqn->config().rmsprop_eps, 0.01);
  EXPECT_EQ(dqn->online_network()->num_actions(), 2);
  EXPECT_THROW(make_learner("dqn", config, envs::Space::box({4}, -1.0f, 1.0f), envs::Space::box({2}, -1.0f, 1.0f)),
               std::invalid_argument);
}

// ---- acting from a copy, observing while updating (policy apex) ----

TEST(DqnTest, AnActorReplicaActsWithItsOwnCopyUntilAssigned) {
  torch::manual_seed(4);
  DqnConfig config = tiny_config();
  config.start_e = 0.5;
  config.end_e = 0.5;
  Dqn dqn(config);
  EXPECT_TRUE(dqn.observes_while_updating());
  set_head(dqn.online_network(), {1, 0, 0, 1}, {0, 0});  // Q(o) = o: the greedy action is argmax o
  const std::unique_ptr<ActorReplica> replica = dqn.make_actor_replica();
  ASSERT_NE(replica, nullptr);
  const at::Tensor o = matrix({1, 0, 0, 1}, 2);
  ActingContext greedy;
  greedy.deterministic = true;
  EXPECT_TRUE(replica->act(o, greedy).actions.equal(at::tensor({0, 1}, at::kLong)));

  // The learner's network moves; the replica acts as before until assign() copies it over.
  set_head(dqn.online_network(), {0, 1, 1, 0}, {0, 0});
  EXPECT_TRUE(replica->act(o, greedy).actions.equal(at::tensor({0, 1}, at::kLong)));
  replica->assign(dqn.flat_parameters().values().detach().clone());
  EXPECT_TRUE(replica->act(o, greedy).actions.equal(at::tensor({1, 0}, at::kLong)));
  EXPECT_TRUE(replica->act(o, greedy).actions.equal(dqn.actor().act(o, greedy).actions));
  // A copy, not an alias: changing the learner again leaves the replica alone.
  set_head(dqn.online_network(), {1, 0, 0, 1}, {0, 0});
  EXPECT_TRUE(replica->act(o, greedy).actions.equal(at::tensor({1, 0}, at::kLong)));

  // The same epsilons as the learner's actor: the one the policy assigns (Ape-X's 0.4 for actor 0
  // of 2), random half the time with the config's 0.5, whatever the network says.
  const at::Tensor many = at::zeros({4000, 2});
  ActingContext apex = at_step(10, 100);
  apex.epsilon = 0.4;
  const double greedy_share_apex = 1.0 - 0.4 / 2.0;  // action 0 greedy (first maximal)
  EXPECT_NEAR(1.0 - replica->act(many, apex).actions.to(at::kDouble).mean().item<double>(), greedy_share_apex, 0.03);
  EXPECT_NEAR(replica->act(many, at_step(10, 100)).actions.to(at::kDouble).mean().item<double>(), 0.25, 0.03);

  EXPECT_THROW(replica->assign(at::zeros({5})), std::invalid_argument);
}

// Ape-X's initial priorities: the replica estimates Q(o, a) and max_a Q(o', a) with its own
// network, and observe() completes |G + discount * max_a Q(o', a) - Q(o, a)| + priority_eps for
// its one-step target; worked by hand for Q(o) = o.
TEST(DqnTest, AReplicaGivesApeXsInitialPrioritiesAndObserveStoresThem) {
  DqnConfig config = tiny_config();
  config.prioritized = true;
  config.gamma = 0.5;
  config.priority_eps = 0.25;
  Dqn dqn(config);
  set_head(dqn.online_network(), {1, 0, 0, 1}, {0, 0});  // Q(o) = o
  const std::unique_ptr<ActorReplica> replica = dqn.make_actor_replica();
  ASSERT_EQ(replica->priority_input_fields(),
            (std::vector<std::string>{transition::kActingQ, transition::kActingNextValue}));
  // Row 0: Q(o, 1) = 2, max_a Q(o') = 3. Row 1: Q(o, 0) = 4, max_a Q(o') = 5.
  TensorMap transitions = step(matrix({0, 2, 4, 0}, 2), {1, 0}, {1, 1}, {0, 1}, {0, 0}, matrix({3, 1, 5, 5}, 2));
  const TensorMap inputs = replica->priority_inputs(transitions);
  ASSERT_EQ(inputs.size(), 2u);
  EXPECT_TRUE(inputs.at(transition::kActingQ).equal(at::tensor({2.0f, 4.0f}))) << inputs.at(transition::kActingQ);
  EXPECT_TRUE(inputs.at(transition::kActingNextValue).equal(at::tensor({3.0f, 5.0f})))
      << inputs.at(transition::kActingNextValue);

  for (const auto& [name, input] : inputs) transitions[name] = input;
  dqn.observe(transitions);
  // Row 0: target 1 + 0.5 * 3 = 2.5: |2.5 - 2| + 0.25 = 0.75. Row 1 terminated: target 1,
  // |1 - 4| + 0.25 = 3.25.
  EXPECT_DOUBLE_EQ(dqn.replay()->priority(0), 0.75);
  EXPECT_DOUBLE_EQ(dqn.replay()->priority(1), 3.25);

  // One estimate without the other is refused in one line.
  TensorMap half = transitions;
  half.erase(transition::kActingNextValue);
  try {
    dqn.observe(half);
    ADD_FAILURE() << "an acting Q without its next value was taken";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("'acting_next_value' is missing"), std::string::npos) << error.what();
  }
  // A uniform replay needs no estimates, and ignores any it is given.
  config.prioritized = false;
  EXPECT_TRUE(Dqn(config).make_actor_replica()->priority_input_fields().empty());
  Dqn uniform(config);
  uniform.observe(transitions);
  EXPECT_EQ(uniform.replay()->size(), 2);
}

// With n-step targets the estimates travel in each env's window: a transition completed at step
// t + m - 1 takes Q(o_t, a_t) from step t and the bootstrap value from step t + m - 1. One env,
// n = 3, gamma 0.5, priority_eps 0.25, the estimates given as an actor would send them.
TEST(DqnTest, NStepInitialPrioritiesTakeEachWindowsFirstQAndLastBootstrapValue) {
  DqnConfig config = tiny_config();
  config.prioritized = true;
  config.n_step = 3;
  config.gamma = 0.5;
  config.priority_eps = 0.25;
  Dqn dqn(config);
  const auto observe = [&dqn](std::vector<float> o, int64_t a, float r, float terminated, float truncated,
                              std::vector<float> next_o, float q, float next_value) {
    TensorMap s = step(matrix(o, 1), {a}, {r}, {terminated}, {truncated}, matrix(next_o, 1));
    s[transition::kActingQ] = at::tensor({q});
    s[transition::kActingNextValue] = at::tensor({next_value});
    dqn.observe(s);
  };
  observe({0, 2}, 1, 1, 0, 0, {3, 1}, /*q=*/2, /*next_value=*/3);
  observe({3, 1}, 0, 2, 0, 0, {1, 4}, 3, 4);
  EXPECT_EQ(dqn.replay()->size(), 0) << "no window is complete yet";
  // Step 2 completes step 0's window: G = 1 + 0.5 * 2 + 0.25 * 4 = 3, discount 0.125, bootstrap
  // value 2 (step 2's): |3 + 0.25 - 2| + 0.25 = 1.5.
  observe({1, 4}, 1, 4, 0, 0, {2, 2}, 4, 2);
  ASSERT_EQ(dqn.replay()->size(), 1);
  EXPECT_DOUBLE_EQ(dqn.replay()->priority(0), 1.5);
  // Step 3 is truncated: the windows of steps 1, 2 and 3 end there and bootstrap from its value 6.
  //   step 1: G = 2 + 0.5 * 4 + 0.25 * 8 = 6, discount 0.125: |6 + 0.75 - 3| + 0.25 = 4
  //   step 2: G = 4 + 0.5 * 8 = 8, discount 0.25: |8 + 1.5 - 4| + 0.25 = 5.75
  //   step 3: G = 8, discount 0.5: |8 + 3 - 2| + 0.25 = 9.25
  observe({2, 2}, 0, 8, 0, 1, {6, 0}, 2, 6);
  ASSERT_EQ(dqn.replay()->size(), 4);
  EXPECT_DOUBLE_EQ(dqn.replay()->priority(1), 4.0);
  EXPECT_DOUBLE_EQ(dqn.replay()->priority(2), 5.75);
  EXPECT_DOUBLE_EQ(dqn.replay()->priority(3), 9.25);
  // A termination does not bootstrap: the next value 9 does not count. |1 - 1| + 0.25.
  observe({1, 1}, 0, 1, 1, 0, {9, 9}, 1, 9);
  ASSERT_EQ(dqn.replay()->size(), 5);
  EXPECT_DOUBLE_EQ(dqn.replay()->priority(4), 0.25);
}

TEST(DqnTest, ObserveMayRunOnAnotherThreadWhileUpdating) {
  torch::manual_seed(5);
  DqnConfig config = tiny_config();
  config.buffer_size = 4096;
  for (const int64_t n_step : {int64_t{1}, int64_t{3}}) {
    config.n_step = n_step;
    Dqn dqn(config);
    fill(dqn, 4);  // the first observe() builds the replay, before any update
    std::thread observer([&dqn] { fill(dqn, 2000); });
    int64_t updates = 0;
    for (int i = 0; i < 300; ++i) updates += dqn.update(10 + i, 0.5).empty() ? 0 : 1;
    observer.join();
    EXPECT_EQ(updates, 300);
    // Every window is flushed: the last step ends an episode (fill terminates every fifth).
    EXPECT_EQ(dqn.replay()->num_added(), 2004) << "n_step " << n_step;
    for (const auto& parameter : dqn.online_network()->parameters())
      EXPECT_TRUE(parameter.isfinite().all().item<bool>());
  }
}

}  // namespace
}  // namespace concord::algos
