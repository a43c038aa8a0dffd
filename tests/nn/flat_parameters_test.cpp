// FlatParameters: parameters become slices of one buffer, gradients of another.
#include "concord/nn/flat_parameters.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace concord::nn {
namespace {

torch::nn::Linear make_linear(int64_t in, int64_t out, double fill) {
  torch::nn::Linear linear(in, out);
  torch::NoGradGuard no_grad;
  linear->weight.fill_(fill);
  linear->bias.fill_(fill + 1.0);
  return linear;
}

TEST(FlatParameters, ValuesAreTheParametersInOrderAndAliasThem) {
  torch::nn::Linear linear = make_linear(3, 2, 0.5);
  FlatParameters flat(*linear);
  ASSERT_EQ(flat.numel(), 8);
  const torch::Tensor expected = torch::tensor({0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 1.5f, 1.5f});
  EXPECT_TRUE(torch::equal(flat.values().detach(), expected));
  {
    torch::NoGradGuard no_grad;
    flat.values().detach()[7] = 9.0f;
  }
  EXPECT_EQ(linear->bias[1].item<float>(), 9.0f);
}

TEST(FlatParameters, BackwardAccumulatesIntoTheFlatGradient) {
  torch::nn::Linear linear = make_linear(2, 1, 1.0);
  FlatParameters flat(*linear);
  const torch::Tensor x = torch::tensor({{2.0f, 3.0f}});
  linear->forward(x).sum().backward();
  // d/dw (w . x + b) = x, d/db = 1.
  EXPECT_TRUE(torch::equal(flat.gradient(), torch::tensor({2.0f, 3.0f, 1.0f})));
  linear->forward(x).sum().backward();
  EXPECT_TRUE(torch::equal(flat.gradient(), torch::tensor({4.0f, 6.0f, 2.0f})));
  EXPECT_TRUE(torch::equal(linear->weight.grad(), torch::tensor({{4.0f, 6.0f}})));
  flat.zero_grad();
  EXPECT_EQ(flat.gradient().abs().sum().item<float>(), 0.0f);
}

TEST(FlatParameters, AnOptimiserOverTheFlatValueMovesTheModule) {
  torch::nn::Linear linear = make_linear(2, 1, 1.0);
  FlatParameters flat(*linear);
  torch::optim::SGD sgd({flat.values()}, torch::optim::SGDOptions(0.5));
  linear->forward(torch::tensor({{2.0f, 3.0f}})).sum().backward();
  sgd.step();
  EXPECT_TRUE(torch::allclose(linear->weight, torch::tensor({{0.0f, -0.5f}})));
  EXPECT_FLOAT_EQ(linear->bias.item<float>(), 1.5f);
}

TEST(FlatParameters, SharedValuesSeparateGradients) {
  torch::nn::Linear first = make_linear(2, 1, 1.0);
  torch::nn::Linear second = make_linear(2, 1, 7.0);
  FlatParameters primary(*first);
  FlatParameters replica(*second, primary);
  // The replica now reads the primary's values.
  EXPECT_TRUE(torch::equal(second->weight, first->weight));
  second->forward(torch::tensor({{2.0f, 3.0f}})).sum().backward();
  EXPECT_TRUE(torch::equal(replica.gradient(), torch::tensor({2.0f, 3.0f, 1.0f})));
  EXPECT_EQ(primary.gradient().abs().sum().item<float>(), 0.0f);
  {
    torch::NoGradGuard no_grad;
    replica.values().detach()[2] = -4.0f;
  }
  EXPECT_FLOAT_EQ(first->bias.item<float>(), -4.0f);
}

TEST(FlatParameters, SharingRefusesAMismatchedModule) {
  torch::nn::Linear first = make_linear(2, 1, 1.0);
  torch::nn::Linear bigger = make_linear(3, 1, 1.0);
  FlatParameters primary(*first);
  EXPECT_THROW(FlatParameters(*bigger, primary), std::invalid_argument);
}

}  // namespace
}  // namespace concord::nn
