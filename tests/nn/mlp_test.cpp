#include "concord/nn/mlp.h"

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace concord::nn {
namespace {

MlpTorso cleanrl_torso() { return MlpTorso(4, std::vector<int64_t>{64, 64}, "tanh"); }

int64_t parameter_count(const torch::nn::Module& module) {
  int64_t count = 0;
  for (const auto& parameter : module.parameters()) {
    count += parameter.numel();
  }
  return count;
}

TEST(MlpTorsoTest, OutputShapeAndParameterCount) {
  MlpTorso torso = cleanrl_torso();
  EXPECT_EQ(torso->input_dim(), 4);
  EXPECT_EQ(torso->output_dim(), 64);
  EXPECT_EQ(torso->forward(torch::randn({5, 4})).sizes(), (torch::IntArrayRef{5, 64}));
  // (4 * 64 + 64) + (64 * 64 + 64).
  EXPECT_EQ(parameter_count(*torso), 4480);
  const auto names = torso->named_parameters().keys();
  EXPECT_EQ(names, (std::vector<std::string>{"fc0.weight", "fc0.bias", "fc1.weight", "fc1.bias"}));
}

TEST(MlpTorsoTest, ForwardIsActivationAfterEveryLayer) {
  MlpTorso torso(3, std::vector<int64_t>{5, 2}, "tanh");
  const torch::Tensor x = torch::randn({4, 3});
  const auto p = torso->named_parameters();
  const torch::Tensor h0 = (x.mm(p["fc0.weight"].t()) + p["fc0.bias"]).tanh();
  const torch::Tensor h1 = (h0.mm(p["fc1.weight"].t()) + p["fc1.bias"]).tanh();
  EXPECT_TRUE(torch::allclose(torso->forward(x), h1, 1e-5, 1e-6));
}

TEST(MlpTorsoTest, TanhIsBoundedAndReluIsNonNegative) {
  MlpTorso tanh_torso(3, std::vector<int64_t>{16}, "tanh");
  MlpTorso relu_torso(3, std::vector<int64_t>{16}, "relu");
  const torch::Tensor x = 100.0 * torch::randn({32, 3});
  EXPECT_LE(tanh_torso->forward(x).abs().max().item<float>(), 1.0f);
  const torch::Tensor relu_out = relu_torso->forward(x);
  EXPECT_GE(relu_out.min().item<float>(), 0.0f);
  EXPECT_GT(relu_out.max().item<float>(), 1.0f);
  EXPECT_EQ(tanh_torso->activation(), Activation::kTanh);
  EXPECT_EQ(relu_torso->activation(), Activation::kRelu);
}

TEST(MlpTorsoTest, LayersAreOrthogonalWithGainSqrt2AndZeroBias) {
  MlpTorso torso(100, std::vector<int64_t>{64, 64}, "tanh");
  for (const std::string layer : {"fc0", "fc1"}) {
    const auto p = torso->named_parameters();
    const torch::Tensor w = p[layer + ".weight"].detach();  // [64, in], 64 <= in
    EXPECT_TRUE(torch::allclose(w.mm(w.t()), 2.0 * torch::eye(64), 0.0, 1e-4)) << layer;
    EXPECT_TRUE(torch::equal(p[layer + ".bias"], torch::zeros({64}))) << layer;
  }
}

TEST(MlpTorsoTest, NoHiddenLayersIsTheIdentity) {
  MlpTorso torso(3, std::vector<int64_t>{}, "relu");
  const torch::Tensor x = torch::randn({2, 3});
  EXPECT_EQ(torso->output_dim(), 3);
  EXPECT_TRUE(torso->parameters().empty());
  EXPECT_TRUE(torch::equal(torso->forward(x), x));
}

TEST(MlpTorsoTest, FollowsTheParametersDtype) {
  MlpTorso torso = cleanrl_torso();
  EXPECT_EQ(torso->forward(torch::ones({2, 4}, torch::kInt64)).scalar_type(), torch::kFloat32);
  torso->to(torch::kFloat64);
  EXPECT_EQ(torso->forward(torch::ones({2, 4})).scalar_type(), torch::kFloat64);
}

TEST(MlpTorsoTest, GradientsReachEveryParameter) {
  MlpTorso torso = cleanrl_torso();
  torso->forward(torch::randn({8, 4})).square().sum().backward();
  for (const auto& parameter : torso->named_parameters()) {
    ASSERT_TRUE(parameter.value().grad().defined()) << parameter.key();
    EXPECT_GT(parameter.value().grad().abs().sum().item<float>(), 0.0f) << parameter.key();
  }
}

TEST(MlpTorsoTest, CloneIsAnIndependentDeepCopy) {
  MlpTorso torso = cleanrl_torso();
  auto copy = std::dynamic_pointer_cast<MlpTorsoImpl>(torso->clone());
  ASSERT_NE(copy, nullptr);
  const torch::Tensor x = torch::randn({3, 4});
  EXPECT_TRUE(torch::equal(copy->forward(x), torso->forward(x)));
  {
    torch::NoGradGuard no_grad;
    copy->named_parameters()["fc0.weight"].add_(1.0);
  }
  EXPECT_FALSE(torch::equal(copy->forward(x), torso->forward(x)));
}

TEST(MlpTorsoTest, RejectsBadArguments) {
  EXPECT_THROW(MlpTorso(4, std::vector<int64_t>{64}, "sigmoid"), std::invalid_argument);
  EXPECT_THROW(MlpTorso(0, std::vector<int64_t>{64}), std::invalid_argument);
  EXPECT_THROW(MlpTorso(4, std::vector<int64_t>{64, 0}), std::invalid_argument);
  MlpTorso torso = cleanrl_torso();
  try {
    torso->forward(torch::zeros({2, 5}));
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("[2, 5]"), std::string::npos) << error.what();
  }
}

TEST(MlpTorsoTest, ParseActivation) {
  EXPECT_EQ(parse_activation("tanh"), Activation::kTanh);
  EXPECT_EQ(parse_activation("relu"), Activation::kRelu);
  try {
    parse_activation("gelu");
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("gelu"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace concord::nn
