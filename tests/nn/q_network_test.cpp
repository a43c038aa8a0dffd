#include "concord/nn/q_network.h"

#include <ATen/ops/randint.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/zeros.h>
#include <c10/core/GradMode.h>
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <torch/utils.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

namespace concord::nn {
namespace {

int64_t parameter_count(const torch::nn::Module& module) {
  int64_t count = 0;
  for (const auto& parameter : module.parameters()) count += parameter.numel();
  return count;
}

// CleanRL dqn.py's CartPole network: 4 -> 120 -> 84 -> 2, ReLU.
QNetworkConfig cartpole(bool dueling = false) {
  QNetworkConfig config;
  config.torso.obs_shape = {4};
  config.torso.action_dim = 2;
  config.torso.hidden_sizes = {120, 84};
  config.torso.activation = "relu";
  config.dueling = dueling;
  return config;
}

// MinAtar's network on a 10x10x4 grid with 3 actions.
QNetworkConfig minatar() {
  QNetworkConfig config;
  config.torso.obs_shape = {10, 10, 4};
  config.torso.action_dim = 3;
  config.torso.torso = "grid_cnn";
  return config;
}

void set_parameter(QNetwork& network, const std::string& name, const std::vector<float>& values) {
  torch::NoGradGuard no_grad;
  at::Tensor parameter = network->named_parameters()[name];
  parameter.copy_(at::tensor(values).view(parameter.sizes()));
}

TEST(QNetworkTest, MlpShapesAndParameterCountMatchCleanRL) {
  torch::manual_seed(0);
  QNetwork network(cartpole());
  const at::Tensor q = network->forward(at::randn({5, 4}));
  EXPECT_EQ(q.sizes(), (std::vector<int64_t>{5, 2}));
  // (4 * 120 + 120) + (120 * 84 + 84) + (84 * 2 + 2), as CleanRL's QNetwork.
  EXPECT_EQ(parameter_count(*network), 10934);
  EXPECT_EQ(network->num_actions(), 2);
}

TEST(QNetworkTest, GridCnnShapesAndParameterCountMatchMinAtar) {
  torch::manual_seed(0);
  QNetwork network(minatar());
  // uint8 grids are converted by the network.
  const at::Tensor q = network->forward(at::randint(2, {3, 10, 10, 4}, at::kByte));
  EXPECT_EQ(q.sizes(), (std::vector<int64_t>{3, 3}));
  // conv 4 -> 16 (3x3), fc 16 * 8 * 8 -> 128, head 128 -> 3.
  EXPECT_EQ(parameter_count(*network), (4 * 16 * 9 + 16) + (16 * 8 * 8 * 128 + 128) + (128 * 3 + 3));
}

TEST(QNetworkTest, CnnTorsoOnPixels) {
  torch::manual_seed(0);
  QNetworkConfig config;
  config.torso.obs_shape = {4, 84, 84};
  config.torso.action_dim = 6;
  config.torso.torso = "cnn";
  QNetwork network(config);
  EXPECT_EQ(network->forward(at::randint(256, {1, 4, 84, 84}, at::kByte)).sizes(), (std::vector<int64_t>{1, 6}));
}

TEST(QNetworkTest, DuelingCombinesValueAndMeanCentredAdvantageExactly) {
  QNetworkConfig config;
  config.torso.obs_shape = {2};
  config.torso.action_dim = 3;
  config.torso.hidden_sizes = {};  // the heads read the observation itself
  config.dueling = true;
  QNetwork network(config);
  EXPECT_EQ(parameter_count(*network), (2 + 1) + (2 * 3 + 3));
  set_parameter(network, "value_head.weight", {1.0f, 2.0f});
  set_parameter(network, "value_head.bias", {0.5f});
  set_parameter(network, "advantage_head.weight", {1.0f, 0.0f, 0.0f, 1.0f, 1.0f, 1.0f});
  set_parameter(network, "advantage_head.bias", {0.0f, 0.0f, -3.0f});

  // o = (1, 2): V = 1 + 4 + 0.5 = 5.5, A = (1, 2, 0), mean A = 1, Q = V + A - 1.
  const at::Tensor q = network->forward(at::tensor({1.0f, 2.0f}).view({1, 2}));
  EXPECT_EQ(q[0][0].item<float>(), 5.5f);
  EXPECT_EQ(q[0][1].item<float>(), 6.5f);
  EXPECT_EQ(q[0][2].item<float>(), 4.5f);
}

TEST(QNetworkTest, DuelingAddsAValueHeadBesideTheAdvantages) {
  QNetwork plain(cartpole());
  QNetwork dueling(cartpole(/*dueling=*/true));
  EXPECT_EQ(parameter_count(*dueling), parameter_count(*plain) + 84 + 1);
  EXPECT_EQ(dueling->named_parameters().contains("advantage_head.weight"), true);
  EXPECT_EQ(plain->named_parameters().contains("head.weight"), true);
}

TEST(QNetworkTest, LayersHavePyTorchDefaultInitialisation) {
  torch::manual_seed(1);
  QNetwork network(cartpole());
  // nn.Linear's default: weights and biases uniform in +-1/sqrt(fan_in).
  for (const auto& [name, fan_in] :
       std::vector<std::pair<std::string, int64_t>>{{"torso.fc0", 4}, {"torso.fc1", 120}, {"head", 84}}) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
    for (const char* suffix : {".weight", ".bias"}) {
      const at::Tensor values = network->named_parameters()[name + suffix];
      EXPECT_LE(values.abs().max().item<double>(), bound + 1e-7) << name << suffix;
      // Not the torsos' orthogonal sqrt(2)-gain weights or zero biases: spread over the range.
      if (values.numel() >= 80) {
        EXPECT_GT(values.abs().max().item<double>(), 0.9 * bound) << name << suffix;
      }
    }
  }
}

TEST(QNetworkTest, BuildsOnDeviceAndClonesDeeply) {
  torch::manual_seed(0);
  QNetwork network = build_q_network(cartpole(), torch::kCPU);
  auto copy = std::dynamic_pointer_cast<QNetworkImpl>(network->clone());
  ASSERT_NE(copy, nullptr);
  const at::Tensor obs = at::randn({2, 4});
  EXPECT_TRUE(copy->forward(obs).equal(network->forward(obs)));
  set_parameter(network, "head.bias", {10.0f, 10.0f});
  EXPECT_FALSE(copy->forward(obs).equal(network->forward(obs)));
}

// R2D2's network: an LSTM between the torso and the head. A sequence unrolled at once gives what
// steps one at a time give, an episode start resets the state, and forward() refuses it.
TEST(QNetworkTest, WithMemoryStepsAndUnrollsAgreeAndStartsReset) {
  torch::manual_seed(3);
  QNetworkConfig config = cartpole();
  config.torso.hidden_sizes = {16};
  config.torso.recurrent = "lstm";
  config.torso.recurrent_size = 8;
  QNetwork network(config);
  ASSERT_TRUE(network->recurrent());
  EXPECT_THROW(network->forward(at::randn({2, 4})), std::logic_error);
  torch::NoGradGuard no_grad;
  const at::Tensor obs = at::randn({5, 3, 4});
  at::Tensor starts = at::zeros({5, 3});
  starts[2][1] = 1.0;  // env 1 starts an episode at step 2
  core::TensorMap unrolled_state;
  const at::Tensor unrolled = network->unroll(obs, starts, unrolled_state);
  ASSERT_EQ(unrolled.sizes(), (std::vector<int64_t>{5, 3, 2}));
  core::TensorMap state;
  for (int64_t t = 0; t < 5; ++t) {
    const at::Tensor q = network->step(obs[t], starts[t], state);
    EXPECT_TRUE(torch::allclose(q, unrolled[t], 1e-5, 1e-6)) << "step " << t;
  }
  EXPECT_TRUE(torch::allclose(state.at("h"), unrolled_state.at("h"), 1e-5, 1e-6));
  // From step 2 on, env 1's Q is what a fresh state gives on the same observations.
  core::TensorMap fresh;
  const at::Tensor restarted = network->unroll(obs.narrow(0, 2, 3).narrow(1, 1, 1), {}, fresh);
  EXPECT_TRUE(torch::allclose(restarted.squeeze(1), unrolled.narrow(0, 2, 3).select(1, 1), 1e-5, 1e-6));
}

TEST(QNetworkTest, RefusesContinuousActionsAndBadObservations) {
  QNetworkConfig continuous = cartpole();
  continuous.torso.action_kind = ActionKind::kContinuous;
  EXPECT_THROW(QNetwork{continuous}, std::invalid_argument);
  QNetworkConfig normalized = cartpole();
  normalized.torso.normalize_observations = true;
  EXPECT_THROW(QNetwork{normalized}, std::invalid_argument);
  QNetworkConfig bad_torso = cartpole();
  bad_torso.torso.torso = "transformer";
  EXPECT_THROW(QNetwork{bad_torso}, std::invalid_argument);
  // The actor-critic's initialisation and head-layer keys mean nothing to a Q-network: refused.
  QNetworkConfig default_init = cartpole();
  default_init.torso.orthogonal_init = false;
  EXPECT_THROW(QNetwork{default_init}, std::invalid_argument);
  QNetworkConfig head_layers = cartpole();
  head_layers.torso.recurrent = "gru";
  head_layers.torso.head_hidden_sizes = {16};
  EXPECT_THROW(QNetwork{head_layers}, std::invalid_argument);

  QNetwork network(cartpole());
  try {
    network->forward(at::randn({2, 5}));
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("[B, 4]"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace concord::nn
