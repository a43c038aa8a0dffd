// SAC's networks: the tanh-squashed Gaussian actor and the soft Q-network.

#include <ATen/ops/equal.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/tensor.h>
#include <c10/core/GradMode.h>
#include <gtest/gtest.h>
#include <torch/nn/modules/linear.h>
#include <torch/utils.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "concord/nn/soft_q_network.h"
#include "concord/nn/squashed_gaussian_actor.h"

namespace concord::nn {
namespace {

// Pendulum-like: 3-dim observations; two action dimensions with different bounds.
SquashedGaussianActorConfig actor_config() {
  SquashedGaussianActorConfig config;
  config.obs_dim = 3;
  config.action_dim = 2;
  config.hidden_sizes = {16, 16};
  config.activation = "relu";
  config.action_low = {-2.0, 0.0};
  config.action_high = {2.0, 1.0};
  return config;
}

at::Tensor named(torch::nn::Module& module, const std::string& name) { return module.named_parameters()[name]; }

TEST(SquashedGaussianActor, ShapesAndLogStdRange) {
  torch::manual_seed(0);
  SquashedGaussianActor actor(actor_config());
  const at::Tensor obs = at::randn({5, 3}) * 100.0;  // large inputs drive log_std towards its bounds
  const auto out = actor->forward(obs);
  EXPECT_EQ(out.mean.sizes(), (std::vector<int64_t>{5, 2}));
  EXPECT_EQ(out.log_std.sizes(), (std::vector<int64_t>{5, 2}));
  EXPECT_GE(out.log_std.min().item<double>(), kSquashedLogStdMin);
  EXPECT_LE(out.log_std.max().item<double>(), kSquashedLogStdMax);
  const SquashedSample sample = actor->sample(obs);
  EXPECT_EQ(sample.action.sizes(), (std::vector<int64_t>{5, 2}));
  EXPECT_EQ(sample.log_prob.sizes(), (std::vector<int64_t>{5}));
  EXPECT_EQ(sample.mean_action.sizes(), (std::vector<int64_t>{5, 2}));
  EXPECT_TRUE(sample.action.requires_grad());  // reparameterised
  EXPECT_EQ(actor->action_scale().sizes(), (std::vector<int64_t>{2}));
}

TEST(SquashedGaussianActor, LogStdIsSquashedIntoItsRange) {
  SquashedGaussianActor actor(actor_config());
  {
    c10::NoGradGuard no_grad;
    named(*actor, "fc_logstd.weight").zero_();
    named(*actor, "fc_logstd.bias").copy_(at::tensor(std::vector<float>{0.0f, 0.5f}));
  }
  const at::Tensor log_std = actor->forward(at::randn({1, 3})).log_std;
  // -5 + 0.5 * 7 * (tanh(x) + 1)
  EXPECT_NEAR(log_std[0][0].item<double>(), -1.5, 1e-6);
  EXPECT_NEAR(log_std[0][1].item<double>(), -5.0 + 3.5 * (std::tanh(0.5) + 1.0), 1e-6);
}

// log pi for a fixed u against the closed form, in double precision by hand:
//   log N(u; m, s) - log(scale * (1 - tanh(u)^2) + 1e-6), summed over the action dimensions.
TEST(SquashedGaussianLogProb, MatchesClosedForm) {
  const std::vector<double> u = {0.3, -1.2, 0.0, 2.5};
  const std::vector<double> mean = {0.1, -0.5, 0.2, 1.0};
  const std::vector<double> log_std = {-1.0, 0.5, -3.0, 0.0};
  const std::vector<double> scale = {2.0, 0.5};
  const auto t = [](const std::vector<double>& v) {
    return at::tensor(std::vector<float>(v.begin(), v.end())).reshape({2, 2});
  };
  const at::Tensor log_prob =
      squashed_gaussian_log_prob(t(u), t(mean), t(log_std), at::tensor(std::vector<float>{2.0f, 0.5f}));
  ASSERT_EQ(log_prob.sizes(), (std::vector<int64_t>{2}));
  for (int row = 0; row < 2; ++row) {
    double expected = 0.0;
    for (int j = 0; j < 2; ++j) {
      const int i = 2 * row + j;
      const double s = std::exp(log_std[i]);
      const double z = (u[i] - mean[i]) / s;
      const double gaussian = -0.5 * z * z - log_std[i] - 0.5 * std::log(2.0 * M_PI);
      const double y = std::tanh(u[i]);
      expected += gaussian - std::log(scale[j] * (1.0 - y * y) + 1e-6);
    }
    EXPECT_NEAR(log_prob[row].item<double>(), expected, 1e-4 * std::max(1.0, std::abs(expected))) << "row " << row;
  }
}

TEST(SquashedGaussianActor, SampleIsTheSquashedReparameterisedGaussian) {
  torch::manual_seed(1);
  SquashedGaussianActor actor(actor_config());
  const at::Tensor obs = at::randn({4, 3});
  const at::Tensor noise = at::randn({4, 2});
  const SquashedSample sample = actor->sample(obs, noise);
  const auto out = actor->forward(obs);
  const at::Tensor u = out.mean + out.log_std.exp() * noise;
  const at::Tensor scale = at::tensor(std::vector<float>{2.0f, 0.5f});
  const at::Tensor bias = at::tensor(std::vector<float>{0.0f, 0.5f});
  EXPECT_TRUE(sample.action.allclose(u.tanh() * scale + bias, 1e-6, 1e-6));
  EXPECT_TRUE(sample.log_prob.allclose(squashed_gaussian_log_prob(u, out.mean, out.log_std, scale), 1e-6, 1e-6));
  EXPECT_TRUE(sample.mean_action.allclose(out.mean.tanh() * scale + bias, 1e-6, 1e-6));
}

TEST(SquashedGaussianActor, DeterministicActionIsTheSquashedMean) {
  torch::manual_seed(2);
  SquashedGaussianActor actor(actor_config());
  const at::Tensor obs = at::randn({6, 3});
  const at::Tensor expected = actor->forward(obs).mean.tanh() * at::tensor(std::vector<float>{2.0f, 0.5f}) +
                              at::tensor(std::vector<float>{0.0f, 0.5f});
  EXPECT_TRUE(actor->deterministic_action(obs).equal(expected));
}

TEST(SquashedGaussianActor, ActionsStayWithinTheBounds) {
  torch::manual_seed(3);
  SquashedGaussianActor actor(actor_config());
  c10::NoGradGuard no_grad;
  // Wide policies and large inputs: tanh saturates, and the actions still lie in the box.
  named(*actor, "fc_logstd.bias").fill_(100.0);
  const at::Tensor actions = actor->sample(at::randn({2000, 3}) * 50.0).action;
  EXPECT_GE(actions.select(1, 0).min().item<double>(), -2.0);
  EXPECT_LE(actions.select(1, 0).max().item<double>(), 2.0);
  EXPECT_GE(actions.select(1, 1).min().item<double>(), 0.0);
  EXPECT_LE(actions.select(1, 1).max().item<double>(), 1.0);
  // And they cover it.
  EXPECT_LT(actions.select(1, 0).min().item<double>(), -1.9);
  EXPECT_GT(actions.select(1, 0).max().item<double>(), 1.9);
}

TEST(SquashedGaussianActor, DefaultBoundsAreMinusOneToOne) {
  SquashedGaussianActorConfig config = actor_config();
  config.action_low.clear();
  config.action_high.clear();
  SquashedGaussianActor actor(config);
  EXPECT_TRUE(actor->action_scale().equal(at::tensor(std::vector<float>{1.0f, 1.0f})));
  EXPECT_TRUE(actor->action_bias().equal(at::tensor(std::vector<float>{0.0f, 0.0f})));
}

TEST(SquashedGaussianActor, KeepsPyTorchsDefaultLinearInit) {
  torch::manual_seed(4);
  SquashedGaussianActor actor(actor_config());
  // nn.Linear's default: every weight and bias within 1 / sqrt(fan_in); an orthogonal init with
  // gain sqrt(2) would exceed it.
  for (const auto& parameter : actor->named_parameters()) {
    const at::Tensor& value = parameter.value();
    const int64_t fan_in = parameter.key().find("fc0") != std::string::npos ? 3 : 16;
    EXPECT_LE(value.abs().max().item<double>(), 1.0 / std::sqrt(static_cast<double>(fan_in)) + 1e-6) << parameter.key();
  }
}

TEST(SquashedGaussianActor, RefusesBadBounds) {
  SquashedGaussianActorConfig config = actor_config();
  config.action_high = {2.0};
  EXPECT_THROW(SquashedGaussianActor{config}, std::invalid_argument);
  config = actor_config();
  config.action_low = {-2.0, 1.0};
  EXPECT_THROW(SquashedGaussianActor{config}, std::invalid_argument);
  config = actor_config();
  config.action_high = {INFINITY, 1.0};
  EXPECT_THROW(SquashedGaussianActor{config}, std::invalid_argument);
}

// With no hidden layers Q(s, a) = w . concat(s, a) + b.
// gSDE without hidden layers, so that the features h are the observations themselves.
SquashedGaussianActorConfig sde_config() {
  SquashedGaussianActorConfig config;
  config.obs_dim = 2;
  config.action_dim = 1;
  config.hidden_sizes = {};
  config.use_sde = true;
  config.log_std_init = std::log(0.5);
  return config;
}

// sigma^2 = h^2 exp(log_std)^2 + 1e-6 with h = (1, 2) and every std 0.5: 5 * 0.25 + 1e-6; the
// mean is the clipped linear head; log pi is the Gaussian's over u = atanh(action) minus the tanh
// correction, u - mean = h W lying within the exploration matrix's spread.
TEST(SquashedGaussianActor, GsdeVarianceMeanAndLogProbFollowTheExplorationMatrix) {
  torch::manual_seed(3);
  SquashedGaussianActor actor(sde_config());
  EXPECT_EQ(actor->named_parameters().find("fc_logstd.weight"), nullptr);
  ASSERT_NE(actor->named_parameters().find("log_std"), nullptr);
  EXPECT_EQ(named(*actor, "log_std").sizes(), (std::vector<int64_t>{2, 1}));
  {
    c10::NoGradGuard no_grad;
    named(*actor, "fc_mean.weight").copy_(at::tensor(std::vector<float>{0.25f, -0.5f}).reshape({1, 2}));
    named(*actor, "fc_mean.bias").fill_(0.1f);
  }
  const at::Tensor obs = at::tensor(std::vector<float>{1.0f, 2.0f, 10.0f, -10.0f}).reshape({2, 2});
  const auto out = actor->forward(obs);
  EXPECT_NEAR(out.mean[0][0].item<double>(), 0.25 - 1.0 + 0.1, 1e-6);
  EXPECT_NEAR(out.mean[1][0].item<double>(), 2.0, 1e-6);  // 7.6, clipped to clip_mean
  EXPECT_NEAR(std::exp(2.0 * out.log_std[0][0].item<double>()), 5 * 0.25 + 1e-6, 1e-5);
  EXPECT_NEAR(std::exp(2.0 * out.log_std[1][0].item<double>()), 200 * 0.25 + 1e-6, 1e-3);

  actor->reset_noise();
  const SquashedSample sample = actor->sample(obs.narrow(0, 0, 1));
  const double u = std::atanh(sample.action.item<double>());
  const double mean = out.mean[0][0].item<double>();
  const double sigma = std::exp(out.log_std[0][0].item<double>());
  const double expected = -0.5 * std::pow((u - mean) / sigma, 2) - std::log(sigma) - 0.5 * std::log(2 * M_PI) -
                          std::log(1.0 - std::pow(std::tanh(u), 2) + 1e-6);
  EXPECT_NEAR(sample.log_prob.item<double>(), expected, 1e-3);
  EXPECT_NEAR(sample.mean_action.item<double>(), std::tanh(mean), 1e-6);
  // The loss reaches log_std through the noise as well as through sigma.
  sample.action.sum().backward();
  EXPECT_GT(named(*actor, "log_std").grad().abs().sum().item<double>(), 0.0);
}

// The noise is a function of the state between two draws: the same observation gets the same
// action until reset_noise(); with reset_noise(B) each of B rows has its own matrix.
TEST(SquashedGaussianActor, GsdeNoiseIsHeldUntilTheNextDraw) {
  torch::manual_seed(4);
  SquashedGaussianActorConfig config = sde_config();
  config.hidden_sizes = {8};
  config.log_std_init = 0.0;
  SquashedGaussianActor actor(config);
  c10::NoGradGuard no_grad;
  const at::Tensor obs = at::randn({1, 2});
  actor->reset_noise();
  const at::Tensor first = actor->sample(obs).action;
  EXPECT_TRUE(at::equal(actor->sample(obs).action, first));
  actor->reset_noise();
  EXPECT_FALSE(at::equal(actor->sample(obs).action, first));

  const at::Tensor rows = obs.repeat({3, 1});
  actor->reset_noise(3);
  const at::Tensor per_row = actor->sample(rows).action;
  EXPECT_FALSE(at::equal(per_row[0], per_row[1]));
  EXPECT_FALSE(at::equal(per_row[1], per_row[2]));
  EXPECT_TRUE(at::equal(actor->sample(rows).action, per_row));
  // A batch of another size shares the one matrix.
  const at::Tensor shared = actor->sample(obs.repeat({2, 1})).action;
  EXPECT_TRUE(at::equal(shared[0], shared[1]));
}

TEST(SquashedGaussianActor, GsdeRefusesWhatItCannotDo) {
  SquashedGaussianActor plain(actor_config());
  EXPECT_THROW(plain->reset_noise(), std::logic_error);
  SquashedGaussianActor sde(sde_config());
  EXPECT_THROW(sde->sample(at::zeros({1, 2}), at::zeros({1, 1})), std::logic_error);
  SquashedGaussianActorConfig bad = sde_config();
  bad.clip_mean = -1.0;
  EXPECT_THROW(SquashedGaussianActor{bad}, std::invalid_argument);
}

TEST(SoftQNetwork, IsALinearFunctionOfObservationAndActionWithoutHiddenLayers) {
  SoftQNetwork q(SoftQNetworkConfig{3, 2, {}, "relu"});
  {
    c10::NoGradGuard no_grad;
    named(*q, "fc_q.weight").copy_(at::tensor(std::vector<float>{1.0f, -2.0f, 0.5f, 3.0f, -1.0f}).reshape({1, 5}));
    named(*q, "fc_q.bias").fill_(0.25);
  }
  const at::Tensor obs = at::tensor(std::vector<float>{1.0f, 2.0f, 3.0f, 0.0f, 0.0f, 0.0f}).reshape({2, 3});
  const at::Tensor actions = at::tensor(std::vector<float>{1.0f, 1.0f, -1.0f, 2.0f}).reshape({2, 2});
  const at::Tensor values = q->forward(obs, actions);
  ASSERT_EQ(values.sizes(), (std::vector<int64_t>{2}));
  EXPECT_NEAR(values[0].item<double>(), 1 - 4 + 1.5 + 3 - 1 + 0.25, 1e-6);
  EXPECT_NEAR(values[1].item<double>(), -3 - 2 + 0.25, 1e-6);
}

TEST(SoftQNetwork, ShapesAndBadInputs) {
  torch::manual_seed(5);
  SoftQNetwork q(SoftQNetworkConfig{3, 2, {16, 16}, "relu"});
  EXPECT_EQ(q->forward(at::randn({7, 3}), at::randn({7, 2})).sizes(), (std::vector<int64_t>{7}));
  EXPECT_THROW(q->forward(at::randn({7, 3}), at::randn({7, 1})), std::invalid_argument);
  EXPECT_THROW(q->forward(at::randn({7, 4}), at::randn({7, 2})), std::invalid_argument);
  EXPECT_THROW(SoftQNetwork(SoftQNetworkConfig{0, 2, {16}, "relu"}), std::invalid_argument);
}

}  // namespace
}  // namespace concord::nn
