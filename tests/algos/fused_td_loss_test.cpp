// fused_td_loss against the same loss composed of autograd operations (gather, squeeze,
// mse_loss or smooth_l1_loss, the importance weights, mean): the loss, the estimates and the
// gradient in Q, with and without weights, on errors on both sides of the Huber loss's kinks and
// exactly at them.
#include "concord/algos/fused_td_loss.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>
#include <stdexcept>

namespace concord::algos {
namespace {

struct Inputs {
  at::Tensor q_values, actions, targets, weights;
};

// float32 contiguous inputs take fused_td_loss's loop; double ones LibTorch's operations.
Inputs random_inputs(int64_t n, int64_t num_actions, uint64_t seed, torch::Dtype dtype = torch::kFloat) {
  torch::manual_seed(seed);
  Inputs in;
  in.q_values = (torch::randn({n, num_actions}, dtype) * 2.0).requires_grad_();
  in.actions = torch::randint(num_actions, {n}, torch::kLong);
  // Errors from about -4 to 4: both sides of the Huber loss's kinks at +-1.
  in.targets = in.q_values.detach().gather(1, in.actions.unsqueeze(1)).squeeze(1) + torch::randn({n}, dtype) * 2.0;
  in.weights = torch::rand({n}, dtype) + 0.05;
  return in;
}

struct Result {
  at::Tensor loss, q_taken, d_q;
};

Result composed(const Inputs& in, bool weighted, const std::string& kind) {
  Result out;
  const at::Tensor q_taken = in.q_values.gather(1, in.actions.unsqueeze(1)).squeeze(1);
  const at::Tensor per_sample = kind == "huber" ? at::smooth_l1_loss(q_taken, in.targets, at::Reduction::None)
                                                : at::mse_loss(q_taken, in.targets, at::Reduction::None);
  out.loss = weighted ? (in.weights * per_sample).mean() : per_sample.mean();
  out.q_taken = q_taken.detach();
  out.d_q = torch::autograd::grad({out.loss}, {in.q_values})[0];
  return out;
}

Result fused(const Inputs& in, bool weighted, const std::string& kind) {
  Result out;
  const TdLoss td = fused_td_loss(in.q_values, in.actions, in.targets, weighted ? in.weights : at::Tensor(), kind);
  out.loss = td.loss;
  out.q_taken = td.q_taken;
  EXPECT_FALSE(td.q_taken.requires_grad());
  out.d_q = torch::autograd::grad({out.loss}, {in.q_values})[0];
  return out;
}

void expect_close(const at::Tensor& fused, const at::Tensor& reference, const char* what) {
  EXPECT_TRUE(torch::allclose(fused, reference, /*rtol=*/1e-6, /*atol=*/1e-7))
      << what << ": max difference " << (fused - reference).abs().max().item<double>();
}

TEST(FusedTdLoss, MatchesTheComposedLossAndItsGradient) {
  for (const torch::Dtype dtype : {torch::kFloat, torch::kDouble}) {
    for (const std::string kind : {"mse", "huber"}) {
      for (bool weighted : {false, true}) {
        for (uint64_t seed : {1, 2, 3}) {
          SCOPED_TRACE(kind + (weighted ? " weighted" : "") + " seed " + std::to_string(seed) +
                       (dtype == torch::kFloat ? " float" : " double"));
          const Inputs in = random_inputs(128, 4, seed, dtype);
          const Result reference = composed(in, weighted, kind);
          const Result result = fused(in, weighted, kind);
          expect_close(result.loss, reference.loss, "loss");
          EXPECT_TRUE(torch::equal(result.q_taken, reference.q_taken));
          expect_close(result.d_q, reference.d_q, "d loss / d Q");
        }
      }
    }
  }
}

// A hand-worked batch: errors -2, -1 (a kink), 0.5 and 3 on actions 1, 0, 1, 0 of two.
TEST(FusedTdLoss, HandWorkedValues) {
  const at::Tensor q = torch::tensor({{0.0f, 1.0f}, {2.0f, 0.0f}, {0.0f, 0.5f}, {4.0f, 0.0f}}).requires_grad_();
  const at::Tensor actions = torch::tensor({1, 0, 1, 0}, torch::kLong);
  const at::Tensor targets = torch::tensor({3.0f, 3.0f, 0.0f, 1.0f});
  const at::Tensor weights = torch::tensor({1.0f, 0.5f, 1.0f, 0.25f});

  // mse: (4 + 1 + 0.25 + 9) / 4; gradient 2e / 4 at the taken action.
  const TdLoss mse = fused_td_loss(q, actions, targets, at::Tensor(), "mse");
  EXPECT_FLOAT_EQ(mse.loss.item<float>(), 14.25f / 4.0f);
  EXPECT_TRUE(torch::equal(mse.q_taken, torch::tensor({1.0f, 2.0f, 0.5f, 4.0f})));
  const at::Tensor d_mse = torch::autograd::grad({mse.loss}, {q})[0];
  EXPECT_TRUE(torch::allclose(d_mse, torch::tensor({{0.0f, -1.0f}, {-0.5f, 0.0f}, {0.0f, 0.25f}, {1.5f, 0.0f}})));

  // Huber, weighted: (1 * 1.5 + 0.5 * 0.5 + 1 * 0.125 + 0.25 * 2.5) / 4; gradient w clamp(e) / 4.
  const TdLoss huber = fused_td_loss(q, actions, targets, weights, "huber");
  EXPECT_FLOAT_EQ(huber.loss.item<float>(), 2.5f / 4.0f);
  const at::Tensor d_huber = torch::autograd::grad({huber.loss}, {q})[0];
  EXPECT_TRUE(
      torch::allclose(d_huber, torch::tensor({{0.0f, -0.25f}, {-0.125f, 0.0f}, {0.0f, 0.125f}, {0.0625f, 0.0f}})));
}

TEST(FusedTdLoss, RefusesBadInputsWithOneLine) {
  const Inputs in = random_inputs(8, 3, 1);
  EXPECT_THROW(fused_td_loss(in.q_values, in.actions, in.targets, at::Tensor(), "l1"), std::invalid_argument);
  EXPECT_THROW(fused_td_loss(in.q_values.flatten(), in.actions, in.targets, at::Tensor(), "mse"),
               std::invalid_argument);
  EXPECT_THROW(fused_td_loss(in.q_values, in.actions.narrow(0, 0, 7), in.targets, at::Tensor(), "mse"),
               std::invalid_argument);
  EXPECT_THROW(fused_td_loss(in.q_values, in.actions.to(torch::kFloat), in.targets, at::Tensor(), "mse"),
               std::invalid_argument);
  EXPECT_THROW(fused_td_loss(in.q_values, in.actions, in.targets.narrow(0, 0, 7), at::Tensor(), "mse"),
               std::invalid_argument);
  EXPECT_THROW(fused_td_loss(in.q_values, in.actions, in.targets, in.weights.narrow(0, 0, 7), "mse"),
               std::invalid_argument);
  // An action outside [0, A): one line naming it (the loop path; LibTorch's gather would throw
  // its own error).
  try {
    fused_td_loss(in.q_values, torch::full({8}, 3, torch::kLong), in.targets, at::Tensor(), "mse");
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "fused_td_loss: actions must lie in [0, 3), got 3 at 0");
  }
}

// max_q_targets against returns + discounts * max_a q_next, on the float32 loop and on double
// (LibTorch's operations), with ties, a terminal discount of 0 and a single action.
TEST(MaxQTargets, MatchesTheComposedTargets) {
  for (const torch::Dtype dtype : {torch::kFloat, torch::kDouble}) {
    for (const int64_t actions : {1, 2, 6}) {
      torch::manual_seed(actions);
      const at::Tensor q_next = torch::randn({128, actions}, dtype);
      q_next[5].fill_(0.25);  // a tie across every action
      const at::Tensor returns = torch::randn({128}, dtype);
      at::Tensor discounts = torch::full({128}, 0.99, dtype);
      discounts[7] = 0.0;
      const at::Tensor expected = returns + discounts * std::get<0>(q_next.max(1));
      EXPECT_TRUE(torch::equal(max_q_targets(returns, discounts, q_next), expected))
          << dtype << " with " << actions << " actions";
    }
  }
}

// NaN in a row wins the max, as LibTorch's max gives it, wherever it lies.
TEST(MaxQTargets, NanWinsTheMax) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const at::Tensor q_next = torch::tensor({{nan, 1.0f}, {1.0f, nan}, {2.0f, 3.0f}});
  const at::Tensor y = max_q_targets(torch::zeros({3}), torch::ones({3}), q_next);
  EXPECT_TRUE(std::isnan(y[0].item<float>()));
  EXPECT_TRUE(std::isnan(y[1].item<float>()));
  EXPECT_EQ(y[2].item<float>(), 3.0f);
  EXPECT_TRUE(std::isnan(std::get<0>(q_next.max(1))[1].item<float>()));
}

TEST(MaxQTargets, RefusesBadShapesWithOneLine) {
  const at::Tensor q_next = torch::randn({4, 2});
  EXPECT_THROW(max_q_targets(torch::zeros({4}), torch::ones({4}), q_next.flatten()), std::invalid_argument);
  EXPECT_THROW(max_q_targets(torch::zeros({4}), torch::ones({4}), torch::randn({4, 0})), std::invalid_argument);
  EXPECT_THROW(max_q_targets(torch::zeros({3}), torch::ones({4}), q_next), std::invalid_argument);
  EXPECT_THROW(max_q_targets(torch::zeros({4}), torch::ones({4, 1}), q_next), std::invalid_argument);
}

}  // namespace
}  // namespace concord::algos
