#include "concord/nn/diag_gaussian.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

namespace concord::nn {
namespace {

// Hand-worked case: sigma = exp(log_std) = [1, 2, 1/2].
//   row 0: mu = [0, 1, -1],   x = [1, 1, 0],      z = (x - mu) / sigma = [1, 0, 2]
//   row 1: mu = [0.5, 0, 2],  x = [0.5, -2, 2.5], z = [0, -1, 1]
// log N(x; mu, sigma) per element = -0.5 z^2 - log sigma - 0.5 log(2 pi), with
// 0.5 log(2 pi) = 0.9189385332046727 and log 2 = 0.6931471805599453:
//   row 0: -1.4189385332046727 - 1.6120857137646180 - 2.2257913526447273 = -5.2568155996140185
//   row 1: -0.9189385332046727 - 2.1120857137646180 - 0.7257913526447274 = -3.7568155996140180
// Entropy per element = 0.5 + 0.5 log(2 pi) + log sigma; summed over [0, ln 2, -ln 2]:
//   3 * 1.4189385332046727 = 4.2568155996140185 for either row.
constexpr double kLogProb[] = {-5.2568155996140185, -3.756815599614018};
constexpr double kEntropy = 4.2568155996140185;

at::Tensor hand_mean() { return at::tensor({0.0, 1.0, -1.0, 0.5, 0.0, 2.0}, at::kDouble).reshape({2, 3}); }
at::Tensor hand_log_std() { return at::tensor({0.0, std::log(2.0), -std::log(2.0)}, at::kDouble); }
at::Tensor hand_x() { return at::tensor({1.0, 1.0, 0.0, 0.5, -2.0, 2.5}, at::kDouble).reshape({2, 3}); }

TEST(DiagGaussianTest, LogProbMatchesClosedForm) {
  const DiagGaussian dist(hand_mean(), hand_log_std());
  const at::Tensor log_prob = dist.log_prob(hand_x());
  ASSERT_EQ(log_prob.sizes(), (at::IntArrayRef{2}));
  EXPECT_NEAR(log_prob[0].item<double>(), kLogProb[0], 1e-13);
  EXPECT_NEAR(log_prob[1].item<double>(), kLogProb[1], 1e-13);
}

TEST(DiagGaussianTest, PerRowLogStdMatchesBroadcastLogStd) {
  const DiagGaussian broadcast(hand_mean(), hand_log_std());
  const DiagGaussian per_row(hand_mean(), hand_log_std().unsqueeze(0).expand({2, 3}).clone());
  EXPECT_TRUE(at::allclose(per_row.log_prob(hand_x()), broadcast.log_prob(hand_x())));
  EXPECT_TRUE(at::allclose(per_row.entropy(), broadcast.entropy()));
  EXPECT_EQ(broadcast.log_std().sizes(), (at::IntArrayRef{2, 3}));
}

TEST(DiagGaussianTest, EntropyMatchesClosedForm) {
  const DiagGaussian dist(hand_mean(), hand_log_std());
  const at::Tensor entropy = dist.entropy();
  ASSERT_EQ(entropy.sizes(), (at::IntArrayRef{2}));
  EXPECT_NEAR(entropy[0].item<double>(), kEntropy, 1e-13);
  EXPECT_NEAR(entropy[1].item<double>(), kEntropy, 1e-13);
}

TEST(DiagGaussianTest, ModeIsTheMean) {
  const DiagGaussian dist(hand_mean(), hand_log_std());
  EXPECT_TRUE(at::equal(dist.mode(), hand_mean()));
  EXPECT_EQ(dist.dim(), 3);
}

TEST(DiagGaussianTest, SampleMomentsMatchMeanAndStd) {
  at::manual_seed(42);
  constexpr int64_t kDraws = 100000;
  const at::Tensor mu = at::tensor({0.0f, 3.0f, -2.0f});
  const at::Tensor log_std = at::tensor({0.0f, std::log(2.0f), std::log(0.5f)});
  const DiagGaussian dist(mu.unsqueeze(0).expand({kDraws, 3}), log_std);
  const at::Tensor samples = dist.sample();
  ASSERT_EQ(samples.sizes(), (at::IntArrayRef{kDraws, 3}));
  const at::Tensor mean = samples.mean(0);
  const at::Tensor std = samples.std(0);
  const float sigma[] = {1.0f, 2.0f, 0.5f};
  for (int64_t j = 0; j < 3; ++j) {
    // Standard error of the mean: sigma / sqrt(1e5) < 0.0064; five of them.
    EXPECT_NEAR(mean[j].item<float>(), mu[j].item<float>(), 5 * sigma[j] / std::sqrt(1e5));
    EXPECT_NEAR(std[j].item<float>(), sigma[j], 0.02 * sigma[j]);
  }
}

TEST(DiagGaussianTest, SampleIsDetachedAndRsampleIsDifferentiable) {
  at::manual_seed(3);
  const at::Tensor mean = hand_mean().requires_grad_();
  const at::Tensor log_std = hand_log_std().requires_grad_();
  const DiagGaussian dist(mean, log_std);
  EXPECT_FALSE(dist.sample().requires_grad());
  const at::Tensor x = dist.rsample();
  x.sum().backward();
  // x = mu + exp(log_std) * eps: dx/dmu = 1, and d(sum x)/d log_std_j = sum_b (x_bj - mu_bj).
  EXPECT_TRUE(at::allclose(mean.grad(), at::ones({2, 3}, at::kDouble)));
  EXPECT_TRUE(at::allclose(log_std.grad(), (x - mean).sum(0).detach()));
}

TEST(DiagGaussianTest, LogProbGradientMatchesClosedForm) {
  // d log N / d mu = (x - mu) / sigma^2 = z / sigma; d log N / d log sigma = z^2 - 1.
  const at::Tensor mean = hand_mean().requires_grad_();
  const at::Tensor log_std = hand_log_std().requires_grad_();
  DiagGaussian(mean, log_std).log_prob(hand_x()).sum().backward();
  const at::Tensor z = (hand_x() - hand_mean()) / hand_log_std().exp();
  EXPECT_TRUE(at::allclose(mean.grad(), z / hand_log_std().exp(), 0.0, 1e-14));
  EXPECT_TRUE(at::allclose(log_std.grad(), (z.square() - 1).sum(0), 0.0, 1e-14));
}

TEST(DiagGaussianTest, RejectsMismatchedShapes) {
  EXPECT_THROW(DiagGaussian(at::zeros({2, 3}), at::zeros({2})), std::invalid_argument);
  EXPECT_THROW(DiagGaussian(at::zeros({2, 3}), at::zeros({3, 3})), std::invalid_argument);
  EXPECT_THROW(DiagGaussian(at::scalar_tensor(0.0), at::zeros({1})), std::invalid_argument);
  try {
    DiagGaussian bad(at::zeros({2, 3}), at::zeros({4}));
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("[2, 3]"), std::string::npos) << message;
    EXPECT_NE(message.find("[4]"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace concord::nn
