#pragma once

#include <string>

#include <ATen/core/Tensor.h>

namespace concord::algos {

// The loss of a value-based update, and the estimates it was taken on.
struct TdLoss {
  at::Tensor loss;     // scalar, differentiable in q_values
  at::Tensor q_taken;  // [N] Q(o, a) of the replayed actions, detached
};

// DQN's temporal-difference loss as one autograd node:
//
//   q_taken = Q[n, a_n],   loss = mean_n w_n * l(q_taken_n - y_n)
//
// where l is the squared error ("mse") or the Huber loss with threshold 1 ("huber", LibTorch's
// smooth_l1_loss), and w the importance weights (undefined: all 1). It computes what
// gather -> squeeze -> mse_loss/smooth_l1_loss -> (w *) -> mean computes, and its gradient in
// q_values, written in closed form: w_n * l'(q_taken_n - y_n) / N at [n, a_n], 0 elsewhere.
//
// Why: a CartPole-sized DQN update is bound by LibTorch's per-operation cost, and those five
// operations become as many autograd nodes, each dispatched again in backward. Here they run once,
// without recording, and backward is one product. The network stays under autograd as before.
//
// For float32 contiguous CPU tensors the forward is one loop over the batch, not a dozen
// operations; it also refuses an action outside [0, A) with one line.
//
// At the Huber loss's kinks (|q - y| = 1) the gradient is +-w/N, as smooth_l1_loss's backward
// gives. q_values is [N, A] and the only input that may require grad; actions [N] integer
// indices in [0, A); targets and weights [N] of q_values' dtype and device. Throws
// std::invalid_argument on other shapes or an unknown loss. tests/algos/fused_td_loss_test.cpp
// pins loss and gradient against the composed operations.
TdLoss fused_td_loss(const at::Tensor& q_values, const at::Tensor& actions, const at::Tensor& targets,
                     const at::Tensor& weights, const std::string& loss);

// Q-learning's targets, y_n = returns_n + discounts_n * max_a q_next[n, a]: what
// returns + discounts * q_next.max(1).values computes, in one loop over the batch for float32
// contiguous CPU tensors (LibTorch's operations otherwise; about six of them, each costing more
// than the arithmetic at a CartPole batch). q_next is [N, A] with A >= 1; returns and discounts
// [N] of its dtype and device. No gradient: call it under no-grad or inference mode. Throws
// std::invalid_argument on other shapes.
at::Tensor max_q_targets(const at::Tensor& returns, const at::Tensor& discounts, const at::Tensor& q_next);

}  // namespace concord::algos
