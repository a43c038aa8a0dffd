#include "concord/nn/init.h"

#include <cmath>

#include <gtest/gtest.h>
#include <torch/nn/modules/conv.h>

namespace concord::nn {
namespace {

// W W^T for a weight read as [out, rest].
torch::Tensor row_gram(const torch::Tensor& weight) {
  const torch::Tensor w = weight.detach().reshape({weight.size(0), -1});
  return w.mm(w.t());
}

torch::Tensor column_gram(const torch::Tensor& weight) {
  const torch::Tensor w = weight.detach().reshape({weight.size(0), -1});
  return w.t().mm(w);
}

TEST(OrthogonalInitTest, WideLinearHasOrthogonalRowsScaledByGain) {
  torch::nn::Linear linear(8, 3);  // weight [3, 8]: rows <= cols
  orthogonal_init(linear, std::sqrt(2.0));
  EXPECT_TRUE(torch::allclose(row_gram(linear->weight), 2.0 * torch::eye(3), 0.0, 1e-5));
  EXPECT_TRUE(torch::equal(linear->bias, torch::zeros({3})));
}

TEST(OrthogonalInitTest, TallLinearHasOrthogonalColumnsScaledByGain) {
  torch::nn::Linear linear(3, 8);  // weight [8, 3]: rows > cols
  orthogonal_init(linear, 0.01);
  EXPECT_TRUE(torch::allclose(column_gram(linear->weight), 1e-4 * torch::eye(3), 0.0, 1e-9));
}

TEST(OrthogonalInitTest, ValueHeadRowHasUnitNorm) {
  torch::nn::Linear head(64, 1);
  orthogonal_init(head, 1.0);
  EXPECT_NEAR(head->weight.detach().square().sum().item<float>(), 1.0f, 1e-5);
  EXPECT_EQ(head->bias.item<float>(), 0.0f);
}

TEST(OrthogonalInitTest, BiasTakesTheConstant) {
  torch::nn::Linear linear(4, 5);
  orthogonal_init(linear, 1.0, 0.5);
  EXPECT_TRUE(torch::equal(linear->bias, torch::full({5}, 0.5f)));
}

TEST(OrthogonalInitTest, RecordsNoGradient) {
  torch::nn::Linear linear(4, 5);
  orthogonal_init(linear, 1.0);
  EXPECT_TRUE(linear->weight.requires_grad());
  EXPECT_TRUE(linear->weight.is_leaf());
  EXPECT_FALSE(linear->weight.grad().defined());
}

TEST(OrthogonalInitTest, SameSeedSameWeights) {
  torch::nn::Linear a(6, 4);
  torch::nn::Linear b(6, 4);
  torch::manual_seed(11);
  orthogonal_init(a, 1.0);
  torch::manual_seed(11);
  orthogonal_init(b, 1.0);
  EXPECT_TRUE(torch::equal(a->weight, b->weight));
}

// A module with a Linear, a Conv2d, a nested Linear and a free parameter.
struct InnerImpl : torch::nn::Module {
  InnerImpl() : fc(register_module("fc", torch::nn::Linear(5, 2))) {}
  torch::nn::Linear fc;
};
TORCH_MODULE(Inner);

struct NetImpl : torch::nn::Module {
  NetImpl()
      : fc(register_module("fc", torch::nn::Linear(10, 4))),
        conv(register_module("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(2, 4, 3)))),
        inner(register_module("inner", Inner())),
        free(register_parameter("free", torch::full({3}, 7.0f))) {}
  torch::nn::Linear fc;
  torch::nn::Conv2d conv;
  Inner inner;
  torch::Tensor free;
};
TORCH_MODULE(Net);

TEST(OrthogonalInitTest, ModuleOverloadReachesEveryLinearAndConvolution) {
  Net net;
  orthogonal_init(*net, 1.0, 0.25);
  EXPECT_TRUE(torch::allclose(row_gram(net->fc->weight), torch::eye(4), 0.0, 1e-5));
  // The convolution's weight [4, 2, 3, 3] is read as [4, 18].
  EXPECT_TRUE(torch::allclose(row_gram(net->conv->weight), torch::eye(4), 0.0, 1e-5));
  EXPECT_TRUE(torch::allclose(row_gram(net->inner->fc->weight), torch::eye(2), 0.0, 1e-5));
  EXPECT_TRUE(torch::equal(net->fc->bias, torch::full({4}, 0.25f)));
  EXPECT_TRUE(torch::equal(net->conv->bias, torch::full({4}, 0.25f)));
  EXPECT_TRUE(torch::equal(net->inner->fc->bias, torch::full({2}, 0.25f)));
  EXPECT_TRUE(torch::equal(net->free, torch::full({3}, 7.0f)));
}

TEST(OrthogonalInitTest, ModuleOverloadOnALinearItself) {
  torch::nn::Linear linear(6, 2);
  orthogonal_init(*linear, 3.0, -1.0);
  EXPECT_TRUE(torch::allclose(row_gram(linear->weight), 9.0 * torch::eye(2), 0.0, 1e-4));
  EXPECT_TRUE(torch::equal(linear->bias, torch::full({2}, -1.0f)));
}

TEST(OrthogonalInitTest, WorksOnAModuleNotOwnedBySharedPtr) {
  NetImpl net;
  orthogonal_init(net, 1.0);
  EXPECT_TRUE(torch::allclose(row_gram(net.fc->weight), torch::eye(4), 0.0, 1e-5));
}

}  // namespace
}  // namespace concord::nn
