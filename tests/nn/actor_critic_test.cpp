#include "concord/nn/actor_critic.h"

#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>

namespace concord::nn {
namespace {

// CartPole-shaped: 4 observations, 2 actions.
ActorCriticConfig discrete_config(bool shared = false) {
  ActorCriticConfig config;
  config.obs_shape = {4};
  config.action_kind = ActionKind::kDiscrete;
  config.action_dim = 2;
  config.shared_torso = shared;
  return config;
}

// 5 observations, 3 action dimensions.
ActorCriticConfig continuous_config(bool shared = false) {
  ActorCriticConfig config;
  config.obs_shape = {5};
  config.action_kind = ActionKind::kContinuous;
  config.action_dim = 3;
  config.shared_torso = shared;
  return config;
}

// Atari-shaped: 4 stacked 84x84 frames, 6 actions, CleanRL's shared Nature-CNN.
ActorCriticConfig atari_config() {
  ActorCriticConfig config;
  config.obs_shape = {4, 84, 84};
  config.action_dim = 6;
  config.torso = "cnn";
  config.shared_torso = true;
  return config;
}

int64_t parameter_count(const torch::nn::Module& module) {
  int64_t count = 0;
  for (const auto& parameter : module.parameters()) {
    count += parameter.numel();
  }
  return count;
}

std::string thrown_message(const ActorCriticConfig& config) {
  try {
    ActorCritic model(config);
  } catch (const std::invalid_argument& error) {
    return error.what();
  }
  return "";
}

TEST(ActorCriticTest, DiscreteForwardShapes) {
  ActorCritic model(discrete_config());
  const PolicyOutput out = model->forward(torch::randn({7, 4}));
  EXPECT_EQ(out.logits.sizes(), (torch::IntArrayRef{7, 2}));
  EXPECT_FALSE(out.mean.defined());
  EXPECT_FALSE(out.log_std.defined());
  EXPECT_EQ(out.value.sizes(), (torch::IntArrayRef{7}));
  EXPECT_EQ(model->value(torch::randn({7, 4})).sizes(), (torch::IntArrayRef{7}));
}

TEST(ActorCriticTest, ContinuousForwardShapes) {
  ActorCriticConfig config = continuous_config();
  config.init_log_std = -0.5;
  ActorCritic model(config);
  const PolicyOutput out = model->forward(torch::randn({7, 5}));
  EXPECT_FALSE(out.logits.defined());
  EXPECT_EQ(out.mean.sizes(), (torch::IntArrayRef{7, 3}));
  EXPECT_TRUE(torch::equal(out.log_std, torch::full({3}, -0.5f)));
  EXPECT_EQ(out.value.sizes(), (torch::IntArrayRef{7}));
  const ActResult act = model->act(torch::randn({7, 5}));
  EXPECT_EQ(act.action.sizes(), (torch::IntArrayRef{7, 3}));
  EXPECT_EQ(act.log_prob.sizes(), (torch::IntArrayRef{7}));
  EXPECT_EQ(act.value.sizes(), (torch::IntArrayRef{7}));
}

TEST(ActorCriticTest, SeparateAndSharedParameterCountsAreExact) {
  // MLP 4-64-64: (4*64 + 64) + (64*64 + 64) = 4480; actor head 64*2 + 2 = 130;
  // critic head 64 + 1 = 65.
  EXPECT_EQ(parameter_count(*ActorCritic(discrete_config(false))), 4480 + 4480 + 130 + 65);
  EXPECT_EQ(parameter_count(*ActorCritic(discrete_config(true))), 4480 + 130 + 65);
  // MLP 5-64-64: 384 + 4160 = 4544; actor head 64*3 + 3 = 195; log_std 3; critic head 65.
  EXPECT_EQ(parameter_count(*ActorCritic(continuous_config(false))), 4544 + 4544 + 195 + 3 + 65);
  EXPECT_EQ(parameter_count(*ActorCritic(continuous_config(true))), 4544 + 195 + 3 + 65);
}

TEST(ActorCriticTest, ParameterNames) {
  const auto separate = ActorCritic(continuous_config(false))->named_parameters().keys();
  EXPECT_EQ(separate, (std::vector<std::string>{"log_std", "actor_torso.fc0.weight", "actor_torso.fc0.bias",
                                                "actor_torso.fc1.weight", "actor_torso.fc1.bias",
                                                "critic_torso.fc0.weight", "critic_torso.fc0.bias",
                                                "critic_torso.fc1.weight", "critic_torso.fc1.bias", "actor_head.weight",
                                                "actor_head.bias", "critic_head.weight", "critic_head.bias"}));
  const auto shared = ActorCritic(discrete_config(true))->named_parameters().keys();
  EXPECT_EQ(shared, (std::vector<std::string>{"torso.fc0.weight", "torso.fc0.bias", "torso.fc1.weight",
                                              "torso.fc1.bias", "actor_head.weight", "actor_head.bias",
                                              "critic_head.weight", "critic_head.bias"}));
}

TEST(ActorCriticTest, HeadsUseCleanRLGains) {
  ActorCritic model(discrete_config());
  const auto p = model->named_parameters();
  const torch::Tensor actor = p["actor_head.weight"].detach();  // [2, 64]
  EXPECT_TRUE(torch::allclose(actor.mm(actor.t()), 1e-4 * torch::eye(2), 0.0, 1e-9));
  EXPECT_TRUE(torch::equal(p["actor_head.bias"], torch::zeros({2})));
  EXPECT_NEAR(p["critic_head.weight"].detach().square().sum().item<float>(), 1.0f, 1e-5);
  EXPECT_TRUE(torch::equal(p["critic_head.bias"], torch::zeros({1})));
  const torch::Tensor torso = p["actor_torso.fc1.weight"].detach();  // [64, 64]
  EXPECT_TRUE(torch::allclose(torso.mm(torso.t()), 2.0 * torch::eye(64), 0.0, 1e-4));
}

TEST(ActorCriticTest, DeterministicActIsTheMode) {
  const torch::Tensor discrete_obs = torch::randn({16, 4});
  ActorCritic discrete(discrete_config());
  const ActResult discrete_act = discrete->act(discrete_obs, /*deterministic=*/true);
  EXPECT_TRUE(torch::equal(discrete_act.action, discrete->distribution(discrete_obs).mode()));
  EXPECT_TRUE(torch::equal(discrete_act.action, discrete->forward(discrete_obs).logits.argmax(-1)));
  EXPECT_EQ(discrete_act.action.scalar_type(), torch::kInt64);

  const torch::Tensor continuous_obs = torch::randn({16, 5});
  ActorCritic continuous(continuous_config());
  const ActResult continuous_act = continuous->act(continuous_obs, /*deterministic=*/true);
  EXPECT_TRUE(torch::equal(continuous_act.action, continuous->forward(continuous_obs).mean));
  EXPECT_FALSE(continuous_act.action.requires_grad());
}

TEST(ActorCriticTest, ActIsConsistentWithDistributionAndValue) {
  for (const ActorCriticConfig& config : {discrete_config(), continuous_config(true)}) {
    ActorCritic model(config);
    const torch::Tensor obs = torch::randn({9, config.obs_shape[0]});
    const ActResult act = model->act(obs);
    EXPECT_FALSE(act.action.requires_grad());
    EXPECT_TRUE(torch::allclose(act.log_prob, model->distribution(obs).log_prob(act.action)));
    EXPECT_TRUE(torch::allclose(act.value, model->value(obs)));
    EXPECT_TRUE(torch::allclose(act.value, model->forward(obs).value));
    const ActionEvaluation evaluation = model->evaluate(obs, act.action);
    EXPECT_TRUE(torch::allclose(evaluation.log_prob, act.log_prob));
    EXPECT_TRUE(torch::allclose(evaluation.entropy, model->distribution(obs).entropy()));
    EXPECT_TRUE(torch::allclose(evaluation.value, act.value));
  }
}

TEST(ActorCriticTest, DistributionKindFollowsTheActionKind) {
  const ActionDistribution discrete = ActorCritic(discrete_config())->distribution(torch::randn({2, 4}));
  EXPECT_TRUE(discrete.is_discrete());
  ASSERT_NE(discrete.categorical(), nullptr);
  EXPECT_EQ(discrete.gaussian(), nullptr);
  EXPECT_EQ(discrete.categorical()->num_categories(), 2);
  const ActionDistribution continuous = ActorCritic(continuous_config())->distribution(torch::randn({2, 5}));
  EXPECT_FALSE(continuous.is_discrete());
  ASSERT_NE(continuous.gaussian(), nullptr);
  EXPECT_EQ(continuous.gaussian()->dim(), 3);
}

TEST(ActorCriticTest, InitialDiscretePolicyIsNearlyUniform) {
  ActorCritic model(discrete_config());
  const torch::Tensor entropy = model->distribution(torch::randn({32, 4})).entropy();
  // |logit difference| <= 0.01 * sqrt(2) * |h| <= 0.12 for tanh features h in R^64, so the
  // entropy is within 0.12^2 / 8 < 2e-3 of ln 2.
  EXPECT_GT(entropy.min().item<float>(), std::log(2.0f) - 2e-3f);
}

TEST(ActorCriticTest, ContinuousActionsAreUnclipped) {
  torch::manual_seed(5);
  ActorCriticConfig config = continuous_config();
  config.init_log_std = 1.0;  // sigma = e: most samples leave [-1, 1]
  ActorCritic model(config);
  const torch::Tensor action = model->act(torch::zeros({256, 5})).action;
  EXPECT_GT(action.abs().max().item<float>(), 3.0f);
}

class ActorCriticGradientTest : public ::testing::TestWithParam<std::tuple<ActionKind, bool, std::string>> {};

TEST_P(ActorCriticGradientTest, GradientsReachEveryParameter) {
  const auto& [kind, shared, torso] = GetParam();
  torch::manual_seed(17);
  ActorCriticConfig config = kind == ActionKind::kDiscrete ? discrete_config(shared) : continuous_config(shared);
  config.torso = torso;
  if (torso == "cnn") {
    config.obs_shape = {2, 36, 36};
    config.cnn_features = 32;
    config.cnn_scale_input = false;
  }
  ActorCritic model(config);
  std::vector<int64_t> obs_shape = {8};
  obs_shape.insert(obs_shape.end(), config.obs_shape.begin(), config.obs_shape.end());
  const torch::Tensor obs = torch::randn(obs_shape);
  const torch::Tensor actions = model->act(obs).action;
  const ActionEvaluation evaluation = model->evaluate(obs, actions);
  const torch::Tensor loss =
      -evaluation.log_prob.mean() - 0.01 * evaluation.entropy.mean() + (evaluation.value - 1.0).square().mean();
  loss.backward();
  for (const auto& parameter : model->named_parameters()) {
    ASSERT_TRUE(parameter.value().grad().defined()) << parameter.key();
    EXPECT_GT(parameter.value().grad().abs().sum().item<float>(), 0.0f) << parameter.key();
  }
}

INSTANTIATE_TEST_SUITE_P(AllLayouts, ActorCriticGradientTest,
                         ::testing::Combine(::testing::Values(ActionKind::kDiscrete, ActionKind::kContinuous),
                                            ::testing::Bool(), ::testing::Values("mlp", "cnn")));

// The fused MLP path (one fused_linear_stack node per torso and head) against the composed
// modules with the same parameters: the head outputs, values, log-probabilities, entropies and
// every parameter's gradient. In double the node runs LibTorch's own operations, so the two differ
// only in the order of a product's sums; in float32 it runs its CBLAS path.
class ActorCriticFusedTest
    : public ::testing::TestWithParam<std::tuple<ActionKind, bool, std::string, at::ScalarType, bool>> {};

TEST_P(ActorCriticFusedTest, MatchesTheComposedModules) {
  const auto& [kind, shared, activation, dtype, hidden] = GetParam();
  torch::manual_seed(23);
  ActorCriticConfig config = kind == ActionKind::kDiscrete ? discrete_config(shared) : continuous_config(shared);
  config.activation = activation;
  if (!hidden) config.hidden_sizes = {};
  ActorCritic fused(config);
  fused->to(dtype);
  auto composed = std::dynamic_pointer_cast<ActorCriticImpl>(fused->clone());
  composed->set_fused(false);
  ASSERT_TRUE(fused->fused());
  ASSERT_FALSE(composed->fused());

  const torch::Tensor obs = torch::randn({9, config.obs_shape[0]});
  const torch::Tensor actions = fused->act(obs).action;
  const ActionEvaluation a = fused->evaluate(obs, actions);
  const ActionEvaluation b = composed->evaluate(obs, actions);
  const double tolerance = dtype == at::kDouble ? 1e-12 : 2e-5;
  const auto close = [tolerance](const torch::Tensor& x, const torch::Tensor& y) {
    return torch::allclose(x, y, tolerance, tolerance);
  };
  EXPECT_TRUE(close(a.log_prob, b.log_prob));
  EXPECT_TRUE(close(a.entropy, b.entropy));
  EXPECT_TRUE(close(a.value, b.value));
  EXPECT_TRUE(close(fused->value(obs), composed->value(obs)));
  const PolicyOutput fused_out = fused->forward(obs);
  const PolicyOutput composed_out = composed->forward(obs);
  const torch::Tensor& head = kind == ActionKind::kDiscrete ? fused_out.logits : fused_out.mean;
  EXPECT_TRUE(close(head, kind == ActionKind::kDiscrete ? composed_out.logits : composed_out.mean));
  EXPECT_TRUE(close(fused_out.value, composed_out.value));

  const auto loss = [](const ActionEvaluation& e) {
    return -(e.log_prob * torch::linspace(-1.0, 1.0, e.log_prob.size(0), e.log_prob.options())).mean() -
           0.01 * e.entropy.mean() + (e.value - 1.0).square().mean();
  };
  loss(a).backward();
  loss(b).backward();
  const auto composed_parameters = composed->named_parameters();
  for (const auto& parameter : fused->named_parameters()) {
    const torch::Tensor& expected = composed_parameters[parameter.key()].grad();
    ASSERT_TRUE(parameter.value().grad().defined()) << parameter.key();
    EXPECT_TRUE(close(parameter.value().grad(), expected))
        << parameter.key() << ": largest difference "
        << (parameter.value().grad() - expected).abs().max().item<double>();
  }
}

INSTANTIATE_TEST_SUITE_P(AllMlpLayouts, ActorCriticFusedTest,
                         ::testing::Combine(::testing::Values(ActionKind::kDiscrete, ActionKind::kContinuous),
                                            ::testing::Bool(), ::testing::Values("tanh", "relu"),
                                            ::testing::Values(at::kDouble, at::kFloat), ::testing::Bool()));

TEST(ActorCriticTest, SeparateTorsosAreIndependent) {
  ActorCritic model(discrete_config());
  const torch::Tensor obs = torch::randn({5, 4});
  const PolicyOutput before = model->forward(obs);
  {
    torch::NoGradGuard no_grad;
    for (auto& parameter : model->named_parameters()) {
      if (parameter.key().rfind("actor_", 0) == 0) {
        parameter.value().add_(0.5);
      }
    }
  }
  const PolicyOutput after = model->forward(obs);
  EXPECT_TRUE(torch::equal(after.value, before.value));
  EXPECT_FALSE(torch::equal(after.logits, before.logits));
}

TEST(ActorCriticTest, SharedTorsoFeedsBothHeads) {
  ActorCritic model(discrete_config(/*shared=*/true));
  const torch::Tensor obs = torch::randn({5, 4});
  const PolicyOutput before = model->forward(obs);
  {
    torch::NoGradGuard no_grad;
    model->named_parameters()["torso.fc0.bias"].add_(0.5);
  }
  const PolicyOutput after = model->forward(obs);
  EXPECT_FALSE(torch::equal(after.value, before.value));
  EXPECT_FALSE(torch::equal(after.logits, before.logits));
}

TEST(ActorCriticTest, MultiDimensionalObservationsAreFlattenedForTheMlp) {
  ActorCriticConfig config = discrete_config();
  config.obs_shape = {2, 3};
  ActorCritic model(config);
  EXPECT_EQ(model->named_parameters()["actor_torso.fc0.weight"].sizes(), (torch::IntArrayRef{64, 6}));
  EXPECT_EQ(model->forward(torch::randn({4, 2, 3})).logits.sizes(), (torch::IntArrayRef{4, 2}));
}

TEST(ActorCriticTest, FollowsTheParametersDtype) {
  ActorCritic model(continuous_config());
  model->to(torch::kFloat64);
  const torch::Tensor obs = torch::randn({3, 5});  // float32 in, converted
  const PolicyOutput out = model->forward(obs);
  EXPECT_EQ(out.mean.scalar_type(), torch::kFloat64);
  EXPECT_EQ(out.log_std.scalar_type(), torch::kFloat64);
  EXPECT_EQ(model->act(obs).action.scalar_type(), torch::kFloat64);
  EXPECT_EQ(ActorCritic(discrete_config())->act(torch::ones({3, 4}, torch::kInt64)).action.sizes(),
            (torch::IntArrayRef{3}));
}

TEST(ActorCriticTest, FollowsTheParametersToCuda) {
  if (!torch::cuda::is_available()) {
    GTEST_SKIP() << "no CUDA device";
  }
  ActorCritic model(continuous_config());
  model->to(torch::Device(torch::kCUDA, 0));
  const ActResult act = model->act(torch::randn({3, 5}));  // CPU observations
  EXPECT_TRUE(act.action.is_cuda());
  EXPECT_TRUE(act.log_prob.is_cuda());
  EXPECT_TRUE(act.value.is_cuda());
}

TEST(ActorCriticTest, CloneIsAnIndependentDeepCopy) {
  ActorCritic model(continuous_config());
  auto copy = std::dynamic_pointer_cast<ActorCriticImpl>(model->clone());
  ASSERT_NE(copy, nullptr);
  const torch::Tensor obs = torch::randn({3, 5});
  EXPECT_TRUE(torch::equal(copy->forward(obs).mean, model->forward(obs).mean));
  EXPECT_TRUE(torch::equal(copy->forward(obs).value, model->forward(obs).value));
  {
    torch::NoGradGuard no_grad;
    copy->named_parameters()["critic_head.bias"].add_(1.0);
    copy->named_parameters()["log_std"].add_(1.0);
  }
  EXPECT_TRUE(torch::allclose(copy->forward(obs).value, model->forward(obs).value + 1.0));
  EXPECT_TRUE(torch::equal(model->forward(obs).log_std, torch::zeros({3})));
}

TEST(ActorCriticTest, RejectsObservationsOfTheWrongShape) {
  ActorCritic model(discrete_config());
  try {
    model->forward(torch::zeros({2, 5}));
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("[B, 4]"), std::string::npos) << message;
    EXPECT_NE(message.find("[2, 5]"), std::string::npos) << message;
  }
  EXPECT_THROW(model->value(torch::zeros({4})), std::invalid_argument);
}

TEST(ActorCriticTest, RejectsBadConfigsNamingEveryField) {
  ActorCriticConfig config = discrete_config();
  config.action_dim = 0;
  config.torso = "rnn";
  const std::string message = thrown_message(config);
  EXPECT_NE(message.find("action_dim=0"), std::string::npos) << message;
  EXPECT_NE(message.find("torso=\"rnn\""), std::string::npos) << message;

  config = discrete_config();
  config.hidden_sizes = {64, -1};
  config.activation = "gelu";
  const std::string mlp_message = thrown_message(config);
  EXPECT_NE(mlp_message.find("hidden_sizes=[64, -1]"), std::string::npos) << mlp_message;
  EXPECT_NE(mlp_message.find("activation=\"gelu\""), std::string::npos) << mlp_message;

  config = atari_config();
  config.obs_shape = {4, 84};
  EXPECT_NE(thrown_message(config).find("torso=cnn does not fit observations of shape [4, 84]"), std::string::npos);
  config.obs_shape = {};
  EXPECT_NE(thrown_message(config).find("obs_shape=[]"), std::string::npos);
}

TEST(ActorCriticTest, RefusesAnotherTorsosKeysInsteadOfIgnoringThem) {
  ActorCriticConfig config = atari_config();
  config.hidden_sizes = {256, 256};
  config.grid_features = 64;
  const std::string message = thrown_message(config);
  EXPECT_NE(
      message.find(
          "hidden_sizes=[256, 256] applies only to torso=mlp, and torso is \"cnn\": leave it at its default [64, 64]"),
      std::string::npos)
      << message;
  EXPECT_NE(message.find("grid_features=64 applies only to torso=grid_cnn"), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;

  config = discrete_config();
  config.activation = "relu";
  config.hidden_sizes = {256};
  EXPECT_NO_THROW(config.validate());
  config.grid_channels = {32};
  EXPECT_NE(thrown_message(config).find("grid_channels=[32] applies only to torso=grid_cnn, and torso is \"mlp\""),
            std::string::npos);

  config = discrete_config();
  config.cnn_features = 32;
  EXPECT_NE(thrown_message(config).find(
                "cnn_features=32 applies only to torso=cnn, and torso is \"mlp\": leave it at its default 512"),
            std::string::npos);
  config = discrete_config();
  config.init_log_std = -0.5;
  EXPECT_NE(thrown_message(config).find("init_log_std=-0.5 applies only to continuous actions"), std::string::npos);
}

TEST(CnnTorsoTest, NatureShapesAndParameterCount) {
  CnnTorso torso(std::vector<int64_t>{4, 84, 84});
  // 84 -> (84 - 8) / 4 + 1 = 20 -> (20 - 4) / 2 + 1 = 9 -> (9 - 3) / 1 + 1 = 7.
  EXPECT_EQ(torso->flatten_dim(), 64 * 7 * 7);
  EXPECT_EQ(torso->output_dim(), 512);
  // conv 4*32*64 + 32, 32*64*16 + 64, 64*64*9 + 64; linear 3136*512 + 512.
  EXPECT_EQ(parameter_count(*torso), 8224 + 32832 + 36928 + 1606144);
  const torch::Tensor pixels = torch::randint(0, 256, {2, 4, 84, 84}, torch::kUInt8);
  const torch::Tensor features = torso->forward(pixels);
  EXPECT_EQ(features.sizes(), (torch::IntArrayRef{2, 512}));
  EXPECT_EQ(features.scalar_type(), torch::kFloat32);
  EXPECT_GE(features.min().item<float>(), 0.0f);
}

TEST(CnnTorsoTest, FlattenSizeFollowsTheInputShape) {
  EXPECT_EQ(CnnTorso(std::vector<int64_t>{1, 36, 36})->flatten_dim(), 64);
  // 100x60: 24x14 -> 11x6 -> 9x4.
  CnnTorso torso(std::vector<int64_t>{3, 100, 60}, 16);
  EXPECT_EQ(torso->flatten_dim(), 64 * 9 * 4);
  EXPECT_EQ(torso->forward(torch::rand({5, 3, 100, 60})).sizes(), (torch::IntArrayRef{5, 16}));
}

TEST(CnnTorsoTest, ScalingDividesBy255) {
  torch::manual_seed(2);
  CnnTorso scaled(std::vector<int64_t>{1, 36, 36}, 8, /*scale_input=*/true);
  CnnTorso unscaled(std::vector<int64_t>{1, 36, 36}, 8, /*scale_input=*/false);
  {
    torch::NoGradGuard no_grad;
    const auto source = scaled->named_parameters();
    for (auto& parameter : unscaled->named_parameters()) {
      parameter.value().copy_(source[parameter.key()]);
    }
  }
  const torch::Tensor pixels = torch::randint(0, 256, {3, 1, 36, 36}, torch::kUInt8);
  EXPECT_TRUE(torch::allclose(scaled->forward(pixels), unscaled->forward(pixels.to(torch::kFloat32) / 255.0)));
}

TEST(CnnTorsoTest, RejectsBadShapes) {
  EXPECT_THROW(CnnTorso(std::vector<int64_t>{4, 35, 84}), std::invalid_argument);
  EXPECT_THROW(CnnTorso(std::vector<int64_t>{84, 84}), std::invalid_argument);
  EXPECT_THROW(CnnTorso(std::vector<int64_t>{4, 84, 84}, 0), std::invalid_argument);
  CnnTorso torso(std::vector<int64_t>{1, 36, 36});
  try {
    torso->forward(torch::zeros({2, 1, 36, 40}));
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("[2, 1, 36, 40]"), std::string::npos) << error.what();
  }
}

TEST(CnnTorsoTest, AtariActorCriticMatchesCleanRL) {
  ActorCritic model(atari_config());
  // Nature-CNN 1684128, actor head 512*6 + 6 = 3078, critic head 513.
  EXPECT_EQ(parameter_count(*model), 1684128 + 3078 + 513);
  const torch::Tensor pixels = torch::randint(0, 256, {2, 4, 84, 84}, torch::kUInt8);
  const ActResult act = model->act(pixels);
  EXPECT_EQ(act.action.sizes(), (torch::IntArrayRef{2}));
  EXPECT_EQ(act.value.sizes(), (torch::IntArrayRef{2}));
  EXPECT_EQ(model->forward(pixels).logits.sizes(), (torch::IntArrayRef{2, 6}));
}

// Observations far from zero mean and unit variance, so that normalising them matters.
torch::Tensor offset_observations(int64_t batch, int64_t dim) { return torch::randn({batch, dim}) * 5.0 + 3.0; }

// A model without normalisation holding `normalised`'s parameters: what `normalised` computes on
// raw observations, this one must compute on observations normalised by hand.
ActorCritic unnormalised_twin(const ActorCritic& normalised) {
  ActorCriticConfig config = normalised->config();
  config.normalize_observations = false;
  ActorCritic twin(config);
  torch::NoGradGuard no_grad;
  for (auto& parameter : twin->named_parameters()) {
    parameter.value().copy_(normalised->named_parameters()[parameter.key()]);
  }
  return twin;
}

TEST(ActorCriticNormalizationTest, EveryMethodSeesObservationsNormalisedByTheStatistics) {
  torch::manual_seed(11);
  ActorCriticConfig config = continuous_config();
  config.normalize_observations = true;
  ActorCritic model(config);
  ASSERT_TRUE(model->observation_stats());
  const torch::Tensor seen = offset_observations(64, 5);
  model->update_observation_stats(seen);
  ActorCritic twin = unnormalised_twin(model);

  // By hand: Gymnasium's statistics (pseudo-count 1e-4, mean 0, var 1, then the batch), float64.
  const torch::Tensor x = seen.to(torch::kFloat64);
  const double n = 64.0;
  const double total = n + 1e-4;
  const torch::Tensor batch_mean = x.mean(0);
  const torch::Tensor mean = batch_mean * (n / total);
  const torch::Tensor var =
      (1e-4 + x.var(0, /*unbiased=*/false) * n + batch_mean.square() * (1e-4 * n / total)) / total;
  EXPECT_TRUE(torch::allclose(model->observation_stats()->mean(), mean, 0.0, 1e-12));
  EXPECT_TRUE(torch::allclose(model->observation_stats()->var(), var, 0.0, 1e-12));

  // One observation far outside the data, to exercise the clip at 10.
  torch::Tensor obs = offset_observations(6, 5);
  obs[0][0] = 1000.0f;
  const torch::Tensor by_hand =
      ((obs.to(torch::kFloat64) - mean) / (var + 1e-8).sqrt()).clamp(-10.0, 10.0).to(torch::kFloat32);
  EXPECT_FLOAT_EQ(by_hand[0][0].item<float>(), 10.0f);

  torch::NoGradGuard no_grad;
  const PolicyOutput out = model->forward(obs);
  const PolicyOutput expected = twin->forward(by_hand);
  EXPECT_TRUE(torch::allclose(out.mean, expected.mean, 1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(out.value, expected.value, 1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(model->value(obs), twin->value(by_hand), 1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(model->distribution(obs).mode(), twin->distribution(by_hand).mode(), 1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(model->act(obs, /*deterministic=*/true).action,
                              twin->act(by_hand, /*deterministic=*/true).action, 1e-5, 1e-6));
  const torch::Tensor actions = torch::randn({6, 3});
  EXPECT_TRUE(
      torch::allclose(model->evaluate(obs, actions).log_prob, twin->evaluate(by_hand, actions).log_prob, 1e-5, 1e-5));
  // Without the statistics the raw observations would give something else.
  EXPECT_FALSE(torch::allclose(out.value, twin->forward(obs).value, 1e-3, 1e-3));
}

TEST(ActorCriticNormalizationTest, StatisticsAreBuffersThatCloneCarries) {
  ActorCriticConfig config = discrete_config();
  config.normalize_observations = true;
  ActorCritic model(config);
  // No new parameters: the optimiser never touches the statistics.
  EXPECT_EQ(parameter_count(*model), parameter_count(*ActorCritic(discrete_config())));
  EXPECT_THAT(model->named_buffers().keys(), ::testing::ElementsAre("obs_rms.mean", "obs_rms.var", "obs_rms.count"));
  model->update_observation_stats(offset_observations(32, 4));
  auto copy = std::dynamic_pointer_cast<ActorCriticImpl>(model->clone());
  ASSERT_NE(copy, nullptr);
  EXPECT_TRUE(torch::equal(copy->observation_stats()->mean(), model->observation_stats()->mean()));
  model->update_observation_stats(offset_observations(32, 4));
  EXPECT_FALSE(torch::equal(copy->observation_stats()->mean(), model->observation_stats()->mean()));
  EXPECT_THROW(model->update_observation_stats(torch::zeros({3, 5})), std::invalid_argument);
}

TEST(ActorCriticNormalizationTest, OffByDefaultAndUpdatesAreIgnored) {
  ActorCritic model(discrete_config());
  EXPECT_FALSE(model->observation_stats());
  EXPECT_TRUE(model->named_buffers().is_empty());
  const torch::Tensor obs = offset_observations(4, 4);
  torch::NoGradGuard no_grad;
  const torch::Tensor before = model->forward(obs).value;
  model->update_observation_stats(offset_observations(32, 4));
  EXPECT_TRUE(torch::equal(model->forward(obs).value, before));
}

}  // namespace
}  // namespace concord::nn
