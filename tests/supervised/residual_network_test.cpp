#include "concord/supervised/residual_network.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "concord/supervised/classifier.h"

namespace concord::supervised {
namespace {

int64_t parameter_count(torch::nn::Module& module) {
  int64_t count = 0;
  for (const auto& parameter : module.parameters()) count += parameter.numel();
  return count;
}

TEST(ResidualNetworkTest, Resnet20HasTheCifarShapeOnDigits) {
  torch::manual_seed(1);
  torch::nn::Sequential network = make_classifier("resnet20");
  // 19 convolutions and 19 batch norms, then the linear layer: 3 stages x 3 blocks x 2 + 1.
  int64_t convolutions = 0;
  int64_t batch_norms = 0;
  for (const auto& module : network->modules(false)) {
    convolutions += module->as<torch::nn::Conv2d>() != nullptr ? 1 : 0;
    batch_norms += module->as<torch::nn::BatchNorm2d>() != nullptr ? 1 : 0;
  }
  EXPECT_EQ(convolutions, 19);
  EXPECT_EQ(batch_norms, 19);
  // Option-A shortcuts add no parameters: 3x3 convolutions 1->16 (144), 6 of 16->16, 16->32 and
  // 5 of 32->32, 32->64 and 5 of 64->64 (267,408 in all), 19 batch norms (1,376), Linear 64->10 (650).
  EXPECT_EQ(parameter_count(*network),
            144 + 6 * 2304 + 4608 + 5 * 9216 + 18432 + 5 * 36864 + 2 * (16 * 7 + 32 * 6 + 64 * 6) + 650);
  EXPECT_EQ(parameter_count(*network), 269434);
  const torch::Tensor logits = network->forward(torch::rand({3, 1, 28, 28}));
  EXPECT_EQ(logits.sizes(), (std::vector<int64_t>{3, 10}));
  network->eval();
  EXPECT_EQ(network->forward(torch::rand({1, 1, 28, 28})).sizes(), (std::vector<int64_t>{1, 10}));
}

TEST(ResidualNetworkTest, ShortcutPadsNewChannelsWithZerosAndSubsamples) {
  torch::manual_seed(2);
  BasicBlock block(2, 4, 2);
  // With both convolutions zeroed, the block is relu(bn(0) + shortcut) = relu(beta + shortcut).
  torch::NoGradGuard no_grad;
  for (auto& parameter : block->named_parameters()) {
    if (parameter.key().find("conv") != std::string::npos) parameter.value().zero_();
  }
  const torch::Tensor x = torch::rand({1, 2, 4, 4});
  const torch::Tensor y = block->forward(x);
  ASSERT_EQ(y.sizes(), (std::vector<int64_t>{1, 4, 2, 2}));
  EXPECT_TRUE(torch::equal(y.select(1, 0), torch::zeros({1, 2, 2})));
  EXPECT_TRUE(torch::allclose(y.select(1, 1), x.select(1, 0).slice(1, 0, 4, 2).slice(2, 0, 4, 2)));
  EXPECT_TRUE(torch::allclose(y.select(1, 2), x.select(1, 1).slice(1, 0, 4, 2).slice(2, 0, 4, 2)));
  EXPECT_TRUE(torch::equal(y.select(1, 3), torch::zeros({1, 2, 2})));
}

// Backward against central differences, in double precision, on a ResNet-8 (one block per
// stage) in training mode, where batch norm uses the batch's own statistics.
TEST(ResidualNetworkTest, GradientsMatchFiniteDifferences) {
  torch::manual_seed(3);
  torch::nn::Sequential network = make_residual_network(1);
  network->to(torch::kFloat64);
  const torch::Tensor images = torch::rand({4, 1, 28, 28}, torch::kFloat64);
  const torch::Tensor labels = torch::tensor({0, 3, 7, 9}, torch::kInt64);
  const auto loss = [&] { return torch::nn::functional::cross_entropy(network->forward(images), labels); };

  network->zero_grad();
  loss().backward();
  const auto parameters = network->parameters();
  int checked = 0;
  for (size_t index = 0; index < parameters.size(); index += 3) {
    torch::Tensor parameter = parameters[index];
    const torch::Tensor flat = parameter.detach().view({-1});
    const int64_t coordinate = torch::randint(flat.numel(), {1}).item<int64_t>();
    const double analytic = parameter.grad().view({-1})[coordinate].item<double>();
    // Small enough that no ReLU input crosses zero between the two evaluations.
    const double h = 1e-7;
    const double original = flat[coordinate].item<double>();
    double plus = 0.0;
    double minus = 0.0;
    {
      torch::NoGradGuard no_grad;
      flat[coordinate] = original + h;
      plus = loss().item<double>();
      flat[coordinate] = original - h;
      minus = loss().item<double>();
      flat[coordinate] = original;
    }
    const double numeric = (plus - minus) / (2 * h);
    EXPECT_NEAR(analytic, numeric, 1e-6 + 1e-4 * std::abs(numeric))
        << "parameter " << index << "[" << coordinate << "]";
    ++checked;
  }
  EXPECT_GE(checked, 8);
}

}  // namespace
}  // namespace concord::supervised
