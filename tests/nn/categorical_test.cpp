#include "concord/nn/categorical.h"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <tuple>
#include <utility>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

namespace concord::nn {
namespace {

// logits [0, ln 2, ln 3]: exp(logits) = [1, 2, 3], so p = [1/6, 2/6, 3/6].
at::Tensor hand_worked_logits() { return at::tensor({0.0, std::log(2.0), std::log(3.0)}, at::kDouble); }

// log p = [ln(1/6), ln(1/3), ln(1/2)].
constexpr double kLogP[] = {-1.791759469228055, -1.0986122886681098, -0.6931471805599453};
// -sum p ln p = (1/6) ln 6 + (1/3) ln 3 + (1/2) ln 2.
constexpr double kEntropy = 1.0114042647073518;

TEST(CategoricalTest, ProbsAreSoftmaxOfHandWorkedLogits) {
  const Categorical dist(hand_worked_logits().unsqueeze(0));
  const at::Tensor expected = at::tensor({1.0 / 6, 2.0 / 6, 3.0 / 6}, at::kDouble).unsqueeze(0);
  EXPECT_TRUE(at::allclose(dist.probs(), expected, 0.0, 1e-15));
  EXPECT_EQ(dist.num_categories(), 3);
}

TEST(CategoricalTest, LogProbIsLogSoftmaxAtTheAction) {
  // Three copies of the same logits, one per action.
  const at::Tensor logits = hand_worked_logits().unsqueeze(0).expand({3, 3});
  const Categorical dist(logits);
  const at::Tensor log_prob = dist.log_prob(at::tensor({0, 1, 2}, at::kLong));
  ASSERT_EQ(log_prob.sizes(), (at::IntArrayRef{3}));
  for (int64_t a = 0; a < 3; ++a) {
    EXPECT_NEAR(log_prob[a].item<double>(), kLogP[a], 1e-14) << "action " << a;
  }
  EXPECT_TRUE(at::equal(log_prob, at::log_softmax(logits, -1).diagonal()));
}

TEST(CategoricalTest, EntropyIsMinusSumPLogP) {
  const Categorical dist(hand_worked_logits().unsqueeze(0));
  const at::Tensor entropy = dist.entropy();
  ASSERT_EQ(entropy.sizes(), (at::IntArrayRef{1}));
  EXPECT_NEAR(entropy.item<double>(), kEntropy, 1e-14);
}

TEST(CategoricalTest, ShiftingLogitsChangesNothing) {
  const Categorical dist(hand_worked_logits().unsqueeze(0) + 7.5);
  EXPECT_NEAR(dist.entropy().item<double>(), kEntropy, 1e-13);
  EXPECT_NEAR(dist.log_prob(at::tensor({2}, at::kLong)).item<double>(), kLogP[2], 1e-13);
}

TEST(CategoricalTest, UniformLogitsHaveEntropyLogN) {
  const Categorical dist(at::zeros({2, 5}));
  const at::Tensor entropy = dist.entropy();
  EXPECT_NEAR(entropy[0].item<float>(), std::log(5.0), 1e-6);
  EXPECT_NEAR(entropy[1].item<float>(), std::log(5.0), 1e-6);
}

TEST(CategoricalTest, ShapesForABatch) {
  const Categorical dist(at::randn({5, 4}));
  EXPECT_EQ(dist.sample().sizes(), (at::IntArrayRef{5}));
  EXPECT_EQ(dist.sample().scalar_type(), at::kLong);
  EXPECT_EQ(dist.mode().sizes(), (at::IntArrayRef{5}));
  EXPECT_EQ(dist.mode().scalar_type(), at::kLong);
  EXPECT_EQ(dist.entropy().sizes(), (at::IntArrayRef{5}));
  EXPECT_EQ(dist.log_prob(at::zeros({5}, at::kLong)).sizes(), (at::IntArrayRef{5}));
}

TEST(CategoricalTest, ModeIsArgmaxFirstOnTies) {
  const Categorical dist(at::tensor({0.1f, 2.0f, -1.0f, 3.0f, 0.0f, 3.0f}).reshape({2, 3}));
  const at::Tensor mode = dist.mode();
  EXPECT_EQ(mode[0].item<int64_t>(), 1);
  EXPECT_EQ(mode[1].item<int64_t>(), 0);
}

TEST(CategoricalTest, SampleFrequenciesMatchProbabilities) {
  at::manual_seed(1234);
  constexpr int64_t kDraws = 60000;
  const Categorical dist(hand_worked_logits().to(at::kFloat).unsqueeze(0).expand({kDraws, 3}));
  const at::Tensor samples = dist.sample();
  ASSERT_EQ(samples.sizes(), (at::IntArrayRef{kDraws}));
  const at::Tensor counts = samples.bincount(/*weights=*/{}, /*minlength=*/3);
  ASSERT_EQ(counts.size(0), 3);
  // The standard error of each frequency is at most sqrt(0.25 / 60000) ~ 0.002.
  const double expected[] = {1.0 / 6, 2.0 / 6, 3.0 / 6};
  for (int64_t a = 0; a < 3; ++a) {
    EXPECT_NEAR(counts[a].item<double>() / kDraws, expected[a], 0.01) << "action " << a;
  }
}

TEST(CategoricalTest, ImpossibleCategoryIsNeverSampledAndKeepsEntropyFinite) {
  at::manual_seed(7);
  const double inf = std::numeric_limits<double>::infinity();
  const at::Tensor logits = at::tensor({0.0, -inf, 0.0}, at::kDouble).requires_grad_();
  const Categorical dist(logits.unsqueeze(0).expand({1000, 3}));
  EXPECT_FALSE(dist.sample().eq(1).any().item<bool>());
  EXPECT_EQ(dist.log_prob(at::tensor({1}, at::kLong).expand({1000}))[0].item<double>(), -inf);
  const at::Tensor entropy = dist.entropy();
  EXPECT_NEAR(entropy[0].item<double>(), std::log(2.0), 1e-14);
  entropy.sum().backward();
  EXPECT_TRUE(logits.grad().isfinite().all().item<bool>());
}

TEST(CategoricalTest, LogProbGradientIsOneHotMinusProbs) {
  // d log p_a / d logit_j = [j == a] - p_j.
  const at::Tensor logits = hand_worked_logits().unsqueeze(0).requires_grad_();
  const Categorical dist(logits);
  dist.log_prob(at::tensor({2}, at::kLong)).sum().backward();
  const at::Tensor expected = at::tensor({-1.0 / 6, -2.0 / 6, 1.0 - 3.0 / 6}, at::kDouble);
  EXPECT_TRUE(at::allclose(logits.grad()[0], expected, 0.0, 1e-14));
}

TEST(CategoricalTest, RejectsLogitsWithoutCategories) {
  EXPECT_THROW(Categorical(at::zeros({3, 0})), std::invalid_argument);
  EXPECT_THROW(Categorical(at::scalar_tensor(1.0)), std::invalid_argument);
  EXPECT_THROW(Categorical{at::Tensor()}, std::invalid_argument);
  try {
    Categorical bad(at::zeros({3, 0}));
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("[3, 0]"), std::string::npos) << error.what();
  }
}

// The fused log_prob and entropy against the composed ones: values, and gradients for any
// weighting of the two outputs, with one impossible category (-inf logit) in the batch.
TEST(CategoricalTest, FusedLogProbAndEntropyMatchTheComposedOnes) {
  at::manual_seed(3);
  const at::Tensor base = at::randn({64, 5}, at::kFloat) * 2.0;
  base[7][2] = -std::numeric_limits<float>::infinity();
  const at::Tensor actions = at::randint(0, 5, {64}, at::kLong);
  actions[7] = 1;
  const at::Tensor w_log_prob = at::randn({64}), w_entropy = at::randn({64});
  const auto gradient = [&](bool fused, double a, double b) {
    const at::Tensor logits = base.clone().requires_grad_();
    at::Tensor log_prob, entropy;
    if (fused) {
      const LogProbAndEntropy out = categorical_log_prob_and_entropy(logits, actions);
      log_prob = out.log_prob;
      entropy = out.entropy;
    } else {
      const Categorical dist(logits);
      log_prob = dist.log_prob(actions);
      entropy = dist.entropy();
    }
    ((log_prob * w_log_prob).sum() * a + (entropy * w_entropy).sum() * b).backward();
    return std::make_tuple(log_prob.detach(), entropy.detach(), logits.grad());
  };
  for (const auto& [a, b] : {std::pair{1.0, 1.0}, std::pair{1.0, 0.0}, std::pair{0.0, 1.0}}) {
    const auto [fused_lp, fused_h, fused_grad] = gradient(true, a, b);
    const auto [lp, h, grad] = gradient(false, a, b);
    EXPECT_TRUE(at::equal(fused_lp, lp));
    EXPECT_TRUE(at::equal(fused_h, h));
    EXPECT_TRUE(at::allclose(fused_grad, grad, 1e-5, 1e-6))
        << "weights " << a << ", " << b << ": max difference " << (fused_grad - grad).abs().max().item<double>();
    EXPECT_TRUE(at::isfinite(fused_grad).all().item<bool>());
  }
  // Only log_prob in the loss: the other output's gradient is simply absent.
  const at::Tensor logits = base.clone().requires_grad_();
  categorical_log_prob_and_entropy(logits, actions).log_prob.sum().backward();
  EXPECT_TRUE(at::isfinite(logits.grad()).all().item<bool>());
  EXPECT_THROW(categorical_log_prob_and_entropy(base, actions.narrow(0, 0, 3)), std::invalid_argument);
}

}  // namespace
}  // namespace concord::nn
