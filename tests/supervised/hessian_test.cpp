// Hessian-vector products and the power-iteration eigenvalue against losses whose Hessian is
// known in closed form.
#include "concord/supervised/hessian.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace concord::supervised {
namespace {

// H = Q diag(6, -2, 1) Q^T with Q a rotation: the eigenvalue of largest magnitude is 6.
torch::Tensor known_hessian() {
  const double c = std::cos(0.7);
  const double s = std::sin(0.7);
  const torch::Tensor rotation = torch::tensor({{c, -s, 0.0}, {s, c, 0.0}, {0.0, 0.0, 1.0}}, torch::kFloat64);
  return rotation.matmul(torch::diag(torch::tensor({6.0, -2.0, 1.0}, torch::kFloat64))).matmul(rotation.t());
}

// loss(x, y) = 0.5 x^T H x + 3 sum(y): Hessian H in x, zero in y.
struct QuadraticCase {
  torch::Tensor hessian = known_hessian();
  torch::Tensor x = torch::tensor({0.3, -1.0, 2.0}, torch::kFloat64).requires_grad_(true);
  torch::Tensor y = torch::tensor({1.5, 2.5}, torch::kFloat64).requires_grad_(true);
  LossClosure loss() {
    return [this] { return 0.5 * x.dot(hessian.mv(x)) + 3.0 * y.sum(); };
  }
};

TEST(Hessian, VectorProductOfAQuadraticIsTheMatrixTimesTheVector) {
  QuadraticCase quadratic;
  const torch::Tensor vector = torch::tensor({1.0, 2.0, -1.0, 4.0, 5.0}, torch::kFloat64);
  const torch::Tensor product = hessian_vector_product(quadratic.loss(), {quadratic.x, quadratic.y}, vector);
  const torch::Tensor expected =
      torch::cat({quadratic.hessian.mv(vector.narrow(0, 0, 3)), torch::zeros({2}, torch::kFloat64)});
  EXPECT_TRUE(torch::allclose(product, expected, 1e-12, 1e-12)) << product << expected;
  EXPECT_FALSE(quadratic.x.grad().defined()) << "no gradient is left on the parameters";
}

TEST(Hessian, PowerIterationFindsTheEigenvalueOfLargestMagnitude) {
  QuadraticCase quadratic;
  PowerIterationOptions options;
  options.max_iterations = 200;
  options.tolerance = 1e-10;
  const EigenvalueEstimate estimate = top_hessian_eigenvalue(quadratic.loss(), {quadratic.x, quadratic.y}, options);
  EXPECT_NEAR(estimate.value, 6.0, 1e-6);
  EXPECT_TRUE(estimate.converged);
  EXPECT_LT(estimate.iterations, 200);
}

TEST(Hessian, TheIterationCapIsReportedAsNotConverged) {
  QuadraticCase quadratic;
  PowerIterationOptions options;
  options.max_iterations = 2;
  options.tolerance = 0.0;
  const EigenvalueEstimate estimate = top_hessian_eigenvalue(quadratic.loss(), {quadratic.x, quadratic.y}, options);
  EXPECT_EQ(estimate.iterations, 2);
  EXPECT_FALSE(estimate.converged);
}

// Through a network: H v matches the central difference of the gradient along v.
TEST(Hessian, NetworkProductMatchesFiniteDifferencesOfTheGradient) {
  torch::manual_seed(3);
  torch::nn::Sequential net(torch::nn::Linear(4, 5), torch::nn::Tanh(), torch::nn::Linear(5, 3));
  net->to(torch::kFloat64);
  const torch::Tensor inputs = torch::randn({8, 4}, torch::kFloat64);
  const torch::Tensor labels = torch::randint(0, 3, {8}, torch::kInt64);
  const std::vector<torch::Tensor> parameters = net->parameters();
  auto loss = [&] { return torch::nn::functional::cross_entropy(net->forward(inputs), labels); };
  int64_t total = 0;
  for (const auto& parameter : parameters) total += parameter.numel();
  const torch::Tensor vector = torch::randn({total}, torch::kFloat64);

  auto flat_gradient_at = [&](double step) {
    torch::NoGradGuard no_grad;
    int64_t offset = 0;
    for (const auto& parameter : parameters) {
      parameter.add_(step * vector.narrow(0, offset, parameter.numel()).view(parameter.sizes()));
      offset += parameter.numel();
    }
    torch::Tensor gradient;
    {
      torch::AutoGradMode enable(true);
      std::vector<torch::Tensor> parts = torch::autograd::grad({loss()}, parameters);
      for (auto& part : parts) part = part.reshape({-1});
      gradient = torch::cat(parts);
    }
    offset = 0;
    for (const auto& parameter : parameters) {
      parameter.sub_(step * vector.narrow(0, offset, parameter.numel()).view(parameter.sizes()));
      offset += parameter.numel();
    }
    return gradient;
  };
  const double h = 1e-5;
  const torch::Tensor finite_difference = (flat_gradient_at(h) - flat_gradient_at(-h)) / (2.0 * h);
  const torch::Tensor product = hessian_vector_product(loss, parameters, vector);
  EXPECT_TRUE(torch::allclose(product, finite_difference, 1e-5, 1e-7));
}

TEST(Hessian, AVectorOfTheWrongSizeIsRefused) {
  QuadraticCase quadratic;
  EXPECT_THROW(hessian_vector_product(quadratic.loss(), {quadratic.x}, torch::zeros({5}, torch::kFloat64)),
               std::invalid_argument);
}

}  // namespace
}  // namespace concord::supervised
