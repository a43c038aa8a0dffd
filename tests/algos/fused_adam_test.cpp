#include "concord/algos/fused_adam.h"

#include <ATen/Context.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/zeros.h>
#include <gtest/gtest.h>
#include <torch/optim/adam.h>
#include <torch/optim/rmsprop.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>
#include <torch/utils.h>

#include <sstream>
#include <vector>

namespace concord::algos {
namespace {

// The fused step runs only where denormals are flushed, as training threads flush them.
class FusedAdam : public ::testing::Test {
 protected:
  void SetUp() override { at::globalContext().setFlushDenormal(true); }
  void TearDown() override { at::globalContext().setFlushDenormal(false); }
};

at::Tensor leaf(const at::Tensor& values) { return values.clone().requires_grad_(true); }

const torch::optim::AdamParamState& adam_state(torch::optim::Adam& adam) {
  return static_cast<const torch::optim::AdamParamState&>(*adam.state().begin()->second);
}

void expect_close(const at::Tensor& actual, const at::Tensor& expected) {
  EXPECT_TRUE(at::allclose(actual, expected, /*rtol=*/1e-5, /*atol=*/1e-7))
      << "largest difference " << (actual - expected).abs().max().item<double>();
}

// Twenty steps on the same gradients, LibTorch's Adam beside the fused one: parameters and both
// moments agree to float rounding, and so does the step count.
void check_against_adam(const torch::optim::AdamOptions& options) {
  torch::manual_seed(11);
  const at::Tensor start = at::randn({1000});
  const at::Tensor reference = leaf(start);
  const at::Tensor fused = leaf(start);
  torch::optim::Adam reference_adam({reference}, options);
  torch::optim::Adam fused_adam({fused}, options);
  for (int step = 0; step < 20; ++step) {
    const at::Tensor gradient = at::randn({1000}) * (step % 3 + 0.5);
    reference.mutable_grad() = gradient.clone();
    fused.mutable_grad() = gradient.clone();
    reference_adam.step();
    ASSERT_TRUE(fused_adam_step(fused_adam));
  }
  expect_close(fused.detach(), reference.detach());
  EXPECT_EQ(adam_state(fused_adam).step(), 20);
  expect_close(adam_state(fused_adam).exp_avg(), adam_state(reference_adam).exp_avg());
  expect_close(adam_state(fused_adam).exp_avg_sq(), adam_state(reference_adam).exp_avg_sq());
}

TEST_F(FusedAdam, TwentyStepsAgreeWithLibTorchsAdam) {
  check_against_adam(torch::optim::AdamOptions(2.5e-4));
  check_against_adam(torch::optim::AdamOptions(1e-2).betas({0.8, 0.99}).eps(1e-5));
}

TEST_F(FusedAdam, WeightDecayAgreesWithLibTorchsAdam) {
  check_against_adam(torch::optim::AdamOptions(1e-3).weight_decay(0.1));
}

// Hand-worked first step: m = 0.1 g, v = 0.001 g^2, the corrections 0.1 and 0.001 undo the
// factors, so theta moves by lr * g / (|g| + eps) = 0.1 * 2 / (2 + 1e-8) ~ 0.1 and by -0.1 for g = -4.
TEST_F(FusedAdam, FirstStepMovesEachParameterByTheLearningRate) {
  const at::Tensor theta = leaf(at::tensor({1.0f, -3.0f}));
  torch::optim::Adam adam({theta}, torch::optim::AdamOptions(0.1));
  theta.mutable_grad() = at::tensor({2.0f, -4.0f});
  ASSERT_TRUE(fused_adam_step(adam));
  EXPECT_NEAR(theta[0].item<float>(), 0.9f, 1e-6);
  EXPECT_NEAR(theta[1].item<float>(), -2.9f, 1e-6);
  EXPECT_NEAR(adam_state(adam).exp_avg()[0].item<float>(), 0.2f, 1e-7);
  EXPECT_NEAR(adam_state(adam).exp_avg_sq()[1].item<float>(), 0.016f, 1e-8);
}

// The state is Adam's own: a checkpoint of it loads into a fresh Adam, whose own step then
// continues where the fused steps left off.
TEST_F(FusedAdam, ItsStateContinuesUnderLibTorchsAdamAfterSerialisation) {
  torch::manual_seed(5);
  const at::Tensor start = at::randn({64});
  const at::Tensor fused = leaf(start);
  const at::Tensor reference = leaf(start);
  torch::optim::Adam fused_adam({fused}, torch::optim::AdamOptions(1e-2));
  torch::optim::Adam reference_adam({reference}, torch::optim::AdamOptions(1e-2));
  std::vector<at::Tensor> gradients;
  for (int step = 0; step < 6; ++step) gradients.push_back(at::randn({64}));
  for (int step = 0; step < 5; ++step) {
    fused.mutable_grad() = gradients[step].clone();
    reference.mutable_grad() = gradients[step].clone();
    ASSERT_TRUE(fused_adam_step(fused_adam));
    reference_adam.step();
  }
  std::ostringstream bytes;
  {
    torch::serialize::OutputArchive archive;
    fused_adam.save(archive);
    archive.save_to(bytes);
  }
  const at::Tensor resumed = leaf(fused.detach());
  torch::optim::Adam resumed_adam({resumed}, torch::optim::AdamOptions(1e-2));
  {
    std::istringstream input(bytes.str());
    torch::serialize::InputArchive archive;
    archive.load_from(input);
    resumed_adam.load(archive);
  }
  resumed.mutable_grad() = gradients[5].clone();
  reference.mutable_grad() = gradients[5].clone();
  resumed_adam.step();
  reference_adam.step();
  EXPECT_EQ(adam_state(resumed_adam).step(), 6);
  expect_close(resumed.detach(), reference.detach());
}

TEST_F(FusedAdam, BumpsTheParametersVersionAsAnInPlaceUpdateWould) {
  const at::Tensor theta = leaf(at::zeros({3}));
  torch::optim::Adam adam({theta}, torch::optim::AdamOptions(0.1));
  theta.mutable_grad() = at::tensor({1.0f, 1.0f, 1.0f});
  const auto before = theta._version();
  ASSERT_TRUE(fused_adam_step(adam));
  EXPECT_GT(theta._version(), before);
}

TEST_F(FusedAdam, LeavesEveryOtherCaseToTheOptimisersOwnStep) {
  const at::Tensor theta = leaf(at::zeros({3}));
  theta.mutable_grad() = at::tensor({1.0f, 1.0f, 1.0f});
  torch::optim::RMSprop rmsprop({theta}, torch::optim::RMSpropOptions(0.1));
  EXPECT_FALSE(fused_adam_step(rmsprop));
  torch::optim::Adam amsgrad({theta}, torch::optim::AdamOptions(0.1).amsgrad(true));
  EXPECT_FALSE(fused_adam_step(amsgrad));
  const at::Tensor other = leaf(at::zeros({2}));
  other.mutable_grad() = at::zeros({2});
  torch::optim::Adam two({theta, other}, torch::optim::AdamOptions(0.1));
  EXPECT_FALSE(fused_adam_step(two));
  const at::Tensor in_double = leaf(at::zeros({3}, at::kDouble));
  in_double.mutable_grad() = at::zeros({3}, at::kDouble);
  torch::optim::Adam doubles({in_double}, torch::optim::AdamOptions(0.1));
  EXPECT_FALSE(fused_adam_step(doubles));
  const at::Tensor no_grad = leaf(at::zeros({3}));
  torch::optim::Adam without({no_grad}, torch::optim::AdamOptions(0.1));
  EXPECT_FALSE(fused_adam_step(without));
  torch::optim::Adam plain({theta}, torch::optim::AdamOptions(0.1));
  at::globalContext().setFlushDenormal(false);
  EXPECT_FALSE(fused_adam_step(plain));
  EXPECT_TRUE(at::equal(theta.detach(), at::zeros({3})));
}

}  // namespace
}  // namespace concord::algos
