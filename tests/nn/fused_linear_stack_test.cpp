#include "concord/nn/fused_linear_stack.h"

#include <ATen/ops/full_like.h>
#include <ATen/ops/nextafter.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/zeros.h>
#include <c10/core/GradMode.h>
#include <c10/core/InferenceMode.h>
#include <gtest/gtest.h>
#include <torch/nn/modules/linear.h>
#include <torch/utils.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "concord/core/blas.h"

namespace concord::nn {
namespace {

// Linear layers of the given sizes, by default in double so that the fused and the composed
// results differ only in the order of a product's sums. In double the node takes LibTorch's
// operations; in float32, on contiguous CPU tensors, its CBLAS path.
std::vector<torch::nn::Linear> layers(const std::vector<int64_t>& sizes, at::ScalarType dtype = at::kDouble) {
  std::vector<torch::nn::Linear> out;
  for (size_t i = 0; i + 1 < sizes.size(); ++i) {
    out.emplace_back(sizes[i], sizes[i + 1]);
    out.back()->to(dtype);
  }
  return out;
}

at::Tensor composed(const at::Tensor& x, std::vector<torch::nn::Linear>& stack, Activation activation,
                    bool activate_last) {
  at::Tensor h = x;
  for (size_t l = 0; l < stack.size(); ++l) {
    h = stack[l]->forward(h);
    if (l + 1 < stack.size() || activate_last) h = activation == Activation::kRelu ? h.relu() : h.tanh();
  }
  return h;
}

void expect_close(const at::Tensor& actual, const at::Tensor& expected, const std::string& what) {
  ASSERT_TRUE(actual.defined()) << what;
  ASSERT_EQ(actual.sizes(), expected.sizes()) << what;
  // float32 sums of a few hundred terms, in another order: a few units in the last place.
  const double tolerance = actual.scalar_type() == at::kDouble ? 1e-12 : 1e-5;
  EXPECT_TRUE(at::allclose(actual, expected, /*rtol=*/tolerance, /*atol=*/tolerance))
      << what << ": largest difference " << (actual - expected).abs().max().item<double>();
}

// Output and every gradient (x, each W and b) of the fused node against the composed modules, for
// a loss that weighs each output differently. With `transposed_x`, x is a transposed view: not
// contiguous, so LibTorch's operations run even in float32.
void check_against_composed(const std::vector<int64_t>& sizes, Activation activation, bool activate_last,
                            at::ScalarType dtype = at::kDouble, int64_t rows = 5, bool transposed_x = false) {
  torch::manual_seed(7);
  std::vector<torch::nn::Linear> stack = layers(sizes, dtype);
  const at::Tensor x =
      (transposed_x ? at::randn({sizes.front(), rows}, dtype).t() : at::randn({rows, sizes.front()}, dtype))
          .requires_grad_(true);
  const at::Tensor weighting = at::randn({rows, sizes.back()}, dtype);

  const at::Tensor expected = composed(x, stack, activation, activate_last);
  (expected * weighting).sum().backward();
  const at::Tensor expected_x_grad = x.grad().clone();
  std::vector<at::Tensor> expected_grads;
  std::vector<at::Tensor> weights;
  std::vector<at::Tensor> biases;
  for (auto& layer : stack) {
    expected_grads.push_back(layer->weight.grad().clone());
    expected_grads.push_back(layer->bias.grad().clone());
    layer->weight.mutable_grad() = at::Tensor();
    layer->bias.mutable_grad() = at::Tensor();
    weights.push_back(layer->weight);
    biases.push_back(layer->bias);
  }
  x.mutable_grad() = at::Tensor();

  const at::Tensor actual = fused_linear_stack(x, weights, biases, activation, activate_last);
  expect_close(actual, expected, "output");
  (actual * weighting).sum().backward();
  expect_close(x.grad(), expected_x_grad, "x's gradient");
  for (size_t l = 0; l < stack.size(); ++l) {
    expect_close(stack[l]->weight.grad(), expected_grads[2 * l], "W_" + std::to_string(l) + "'s gradient");
    expect_close(stack[l]->bias.grad(), expected_grads[2 * l + 1], "b_" + std::to_string(l) + "'s gradient");
  }
}

TEST(FusedLinearStack, ReluStackMatchesTheComposedLayersAndTheirGradients) {
  check_against_composed({4, 120, 84, 2}, Activation::kRelu, /*activate_last=*/false);
}

TEST(FusedLinearStack, TanhStackWithTheLastActivationMatchesTheComposedLayers) {
  check_against_composed({3, 16, 8}, Activation::kTanh, /*activate_last=*/true);
}

// float32 on contiguous CPU tensors: one CBLAS call per product and loops for the rest, at
// DQN's batch and sizes, against LibTorch's own float32 layers.
TEST(FusedLinearStack, Float32BlasPathMatchesTheComposedLayers) {
  ASSERT_NE(core::cblas_sgemm(), nullptr) << "the loaded BLAS exports no cblas_sgemm";
  check_against_composed({4, 120, 84, 2}, Activation::kRelu, /*activate_last=*/false, at::kFloat, 128);
  check_against_composed({3, 16, 8}, Activation::kTanh, /*activate_last=*/true, at::kFloat, 33);
  check_against_composed({5, 7, 3}, Activation::kRelu, /*activate_last=*/true, at::kFloat, 1);
}

// The CPU path's own tanh: within 1.52 units in the last place of the exact value (LibTorch's own
// is within 1) over a sweep of float32 from 0 to past 9, where tanh rounds to 1, on both signs,
// and NaN stays NaN. One layer of weight 1 and bias 0 passes x through unchanged.
TEST(FusedLinearStack, Float32TanhIsWithinTwoUnitsInTheLastPlace) {
  ASSERT_NE(core::cblas_sgemm(), nullptr) << "the loaded BLAS exports no cblas_sgemm";
  std::vector<float> values;
  for (float v = 1e-30F; v < 12.0F; v = v < 1e-3F ? v * 1.5F : std::nextafter(v + v * 1.3e-4F, 100.0F)) {
    values.push_back(v);
    values.push_back(-v);
  }
  values.push_back(std::numeric_limits<float>::quiet_NaN());
  const auto n = static_cast<int64_t>(values.size());
  const at::Tensor x = at::tensor(values).reshape({n, 1});
  const at::Tensor out = fused_linear_stack(x, {at::ones({1, 1})}, {at::zeros({1})}, Activation::kTanh, true);
  const at::Tensor exact = x.to(at::kDouble).tanh();
  const at::Tensor rounded = exact.to(at::kFloat);
  // One unit in the last place of the rounded exact value: the gap to the next float away from 0.
  const at::Tensor ulp = (rounded.abs().nextafter(at::full_like(rounded, 2.0F)) - rounded.abs()).to(at::kDouble);
  const at::Tensor error = ((out.to(at::kDouble) - exact).abs() / ulp).narrow(0, 0, n - 1);
  EXPECT_LE(error.max().item<double>(), 1.52) << "at x = " << x.reshape(-1)[error.argmax()].item<float>();
  EXPECT_TRUE(std::isnan(out[n - 1][0].item<float>()));
}

// The same in float32 when x is not contiguous: LibTorch's operations.
TEST(FusedLinearStack, Float32NonContiguousInputMatchesTheComposedLayers) {
  check_against_composed({4, 120, 84, 2}, Activation::kRelu, /*activate_last=*/false, at::kFloat, 128,
                         /*transposed_x=*/true);
}

// relu keeps NaN, as LibTorch's does, on either path, and lets the gradient through it, as
// LibTorch's threshold_backward does (it zeroes where h <= 0).
TEST(FusedLinearStack, ReluKeepsNanOnBothPaths) {
  for (const at::ScalarType dtype : {at::kFloat, at::kDouble}) {
    const auto options = at::TensorOptions().dtype(dtype);
    const at::Tensor x = at::tensor({std::numeric_limits<double>::quiet_NaN(), -1.0, 2.0}, options).reshape({3, 1});
    const at::Tensor w = at::ones({1, 1}, options).requires_grad_(true);
    const at::Tensor b = at::zeros({1}, options).requires_grad_(true);
    const at::Tensor y = fused_linear_stack(x, {w}, {b}, Activation::kRelu, /*activate_last=*/true);
    const at::Tensor expected = x.relu();
    EXPECT_TRUE(std::isnan(y[0][0].item<double>())) << dtype;
    EXPECT_EQ(y[1][0].item<double>(), 0.0) << dtype;
    EXPECT_EQ(y[2][0].item<double>(), 2.0) << dtype;
    EXPECT_TRUE(std::isnan(expected[0][0].item<double>()));
    y.sum().backward();
    EXPECT_EQ(b.grad().item<double>(), 2.0) << dtype;  // the rows with h = NaN and h = 2
  }
}

TEST(FusedLinearStack, OneLayerMatchesLinear) {
  check_against_composed({6, 3}, Activation::kRelu, /*activate_last=*/false);
  check_against_composed({6, 3}, Activation::kRelu, /*activate_last=*/true);
}

TEST(FusedLinearStack, HandWorkedReluGradients) {
  // x = [1, 2]; W_1 = [[1, 0], [0, -1]], b_1 = [0, 0]: pre-activation [1, -2], h_1 = [1, 0].
  // W_2 = [[3, 4]], b_2 = [0.5]: y = 3 * 1 + 4 * 0 + 0.5 = 3.5. With dy = 1:
  //   g_2 = [1]; dW_2 = g_2^T h_1 = [[1, 0]]; db_2 = [1]; dh_1 = g_2 W_2 = [3, 4]
  //   g_1 = dh_1 * (h_1 > 0) = [3, 0]; dW_1 = g_1^T x = [[3, 6], [0, 0]]; db_1 = [3, 0]
  //   dx = g_1 W_1 = [3, 0]
  const auto options = at::TensorOptions().dtype(at::kDouble);
  const at::Tensor x = at::tensor({1.0, 2.0}, options).reshape({1, 2}).requires_grad_(true);
  const at::Tensor w1 = at::tensor({1.0, 0.0, 0.0, -1.0}, options).reshape({2, 2}).requires_grad_(true);
  const at::Tensor b1 = at::tensor({0.0, 0.0}, options).requires_grad_(true);
  const at::Tensor w2 = at::tensor({3.0, 4.0}, options).reshape({1, 2}).requires_grad_(true);
  const at::Tensor b2 = at::tensor({0.5}, options).requires_grad_(true);
  const at::Tensor y = fused_linear_stack(x, {w1, w2}, {b1, b2}, Activation::kRelu, /*activate_last=*/false);
  EXPECT_EQ(y.item<double>(), 3.5);
  y.sum().backward();
  EXPECT_TRUE(at::equal(w2.grad(), at::tensor({1.0, 0.0}, options).reshape({1, 2})));
  EXPECT_TRUE(at::equal(b2.grad(), at::tensor({1.0}, options)));
  EXPECT_TRUE(at::equal(w1.grad(), at::tensor({3.0, 6.0, 0.0, 0.0}, options).reshape({2, 2})));
  EXPECT_TRUE(at::equal(b1.grad(), at::tensor({3.0, 0.0}, options)));
  EXPECT_TRUE(at::equal(x.grad(), at::tensor({3.0, 0.0}, options).reshape({1, 2})));
}

TEST(FusedLinearStack, WithoutGradModeRecordsNothingAndGivesTheSameOutput) {
  torch::manual_seed(3);
  std::vector<torch::nn::Linear> stack = layers({4, 8, 2});
  const at::Tensor x = at::randn({3, 4}, at::kDouble);
  const std::vector<at::Tensor> weights{stack[0]->weight, stack[1]->weight};
  const std::vector<at::Tensor> biases{stack[0]->bias, stack[1]->bias};
  const at::Tensor with_grad = fused_linear_stack(x, weights, biases, Activation::kRelu, false);
  EXPECT_TRUE(with_grad.requires_grad());
  {
    c10::InferenceMode inference;
    const at::Tensor inferred = fused_linear_stack(x, weights, biases, Activation::kRelu, false);
    EXPECT_FALSE(inferred.requires_grad());
    EXPECT_TRUE(at::equal(inferred, with_grad.detach()));
  }
  c10::NoGradGuard no_grad;
  const at::Tensor without = fused_linear_stack(x, weights, biases, Activation::kRelu, false);
  EXPECT_FALSE(without.requires_grad());
  EXPECT_TRUE(at::equal(without, with_grad.detach()));
}

TEST(FusedLinearStack, RefusesShapesThatDoNotChain) {
  const at::Tensor x = at::randn({2, 4});
  const at::Tensor w = at::randn({3, 4});
  const at::Tensor b = at::randn({3});
  EXPECT_THROW(fused_linear_stack(x, {}, {}, Activation::kRelu, false), std::invalid_argument);
  EXPECT_THROW(fused_linear_stack(x, {w}, {}, Activation::kRelu, false), std::invalid_argument);
  EXPECT_THROW(fused_linear_stack(x, {w, w}, {b, b}, Activation::kRelu, false), std::invalid_argument);
  EXPECT_THROW(fused_linear_stack(at::randn({4}), {w}, {b}, Activation::kRelu, false), std::invalid_argument);
  EXPECT_THROW(fused_linear_stack(x, {w}, {at::randn({2})}, Activation::kRelu, false), std::invalid_argument);
  try {
    fused_linear_stack(x, {at::randn({3, 5})}, {b}, Activation::kRelu, false);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()),
              "fused_linear_stack: layer 0 expects weight [out, 4] and bias [out], got [3, 5] and [3]");
  }
}

}  // namespace
}  // namespace concord::nn
