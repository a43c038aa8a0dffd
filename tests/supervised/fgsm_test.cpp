// FGSM on a model whose input gradient is known: one linear layer.
#include "concord/supervised/fgsm.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace concord::supervised {
namespace {

TEST(Fgsm, StepsAlongTheSignOfTheInputGradientAndStaysInTheUnitRange) {
  // logits = W x with W = [[1, -1, 0], [0, 0, 0]]; label 0: d loss / dx = (p0 - 1) W[0] + p1 W[1]
  // = (p0 - 1) [1, -1, 0], so its sign is [-1, +1, 0].
  torch::nn::Linear linear(torch::nn::LinearOptions(3, 2).bias(false));
  {
    torch::NoGradGuard no_grad;
    linear->weight.copy_(torch::tensor({{1.0f, -1.0f, 0.0f}, {0.0f, 0.0f, 0.0f}}));
  }
  torch::nn::Sequential model(linear);
  const torch::Tensor images = torch::tensor({{0.5f, 0.5f, 0.5f}, {0.05f, 0.98f, 0.2f}});
  const torch::Tensor labels = torch::tensor({0, 0}, torch::kInt64);
  const torch::Tensor adversarial = fgsm_examples(model, images, labels, 0.1);
  EXPECT_TRUE(torch::allclose(adversarial, torch::tensor({{0.4f, 0.6f, 0.5f}, {0.0f, 1.0f, 0.2f}}))) << adversarial;
  EXPECT_FALSE(linear->weight.grad().defined()) << "the parameters' gradients are left alone";
}

}  // namespace
}  // namespace concord::supervised
