#pragma once

#include <vector>

#include <ATen/core/Tensor.h>

#include "concord/nn/mlp.h"

namespace concord::nn {

// A stack of linear layers with an activation after each, as one autograd node:
//
//   h_0 = x,   h_l = act(h_{l-1} W_l^T + b_l)   (l = 1..L; the last layer's act only if
//                                                 activate_last)
//
// It computes what Linear -> act -> ... -> Linear computes, and its gradients in x, every W_l and
// every b_l, written in closed form: with g_L the output's gradient and g_l scaled by act'(h_l)
// where an activation follows layer l,
//
//   dW_l = g_l^T h_{l-1},   db_l = sum_n g_l,   g_{l-1} = g_l W_l.
//
// Why: a CartPole-sized Q-network's update is bound by LibTorch's per-operation cost, not its
// arithmetic. Composed, each layer is about a dozen autograd operations forward and backward
// (transposes, addmm, the activation, its backward, the bias reduction). Here a layer is one
// product and one in-place activation forward, two products, a reduction and a mask backward.
// relu's derivative at 0 is 0 and tanh's is 1 - h^2, as LibTorch's own backward gives.
//
// On the CPU, for float32 contiguous tensors, each product is one call of the BLAS's
// cblas_sgemm (core::cblas_sgemm) on the tensors' memory, and the bias, relu and their gradients
// are loops: a layer then costs LibTorch only the allocation of its result. Elsewhere (CUDA,
// other dtypes, strided views, no CBLAS in the process) LibTorch's operations compute the same.
//
// When grad mode is off, or no input requires grad, only the forward products run (no node is
// recorded). x is [N, in] of the weights' dtype and device; weights [out_l, in_l] and biases
// [out_l] chain in size. Throws std::invalid_argument on other shapes or an empty stack.
// tests/nn/fused_linear_stack_test.cpp pins the output and every gradient against the
// composed modules.
at::Tensor fused_linear_stack(const at::Tensor& x, const std::vector<at::Tensor>& weights,
                              const std::vector<at::Tensor>& biases, Activation activation, bool activate_last);

}  // namespace concord::nn
