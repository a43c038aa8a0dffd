#pragma once

#include <vector>

#include <ATen/core/Tensor.h>

namespace concord::nn {

// One layer of an LSTM or a GRU run over a whole [T, B] sequence as one autograd node, with every
// env's state reset to zeros where its episode starts (before step t where starts[t, b] is 1),
// computing what torch::nn::LSTM / torch::nn::GRU compute step by step (the gate order and the two
// biases theirs: LSTM i, f, g, o; GRU r, z, n with r applied to W_hn h + b_hn):
//
//   LSTM  [i f g o] = x W_ih^T + b_ih + h W_hh^T + b_hh,  c' = sig(f) c + sig(i) tanh(g),
//         h' = sig(o) tanh(c')
//   GRU   r = sig(x W_ir^T + b_ir + h W_hr^T + b_hr),  z likewise,
//         n = tanh(x W_in^T + b_in + r (h W_hn^T + b_hn)),  h' = (h - n) z + n
//
// Why: a recurrent PPO update re-runs every env sequence many times (20 epochs x 2 cores at
// CartPole scale), and LibTorch's LSTM costs a dozen operations forward and more backward per
// step or per segment between episode starts, each dispatched and recorded on its own. Here, as
// cuDNN arranges it, the input projection of all T steps is one product before the loop; a step
// is one [B, H] x [H, G H] product and plain loops; backward (BPTT) is one small product a step
// for the state's gradient, and the weights' and the input's gradients are one product each over
// all T steps after the loop.
//
// features [T, B, I]; starts [T, B] of 0/1 (or undefined: no resets); state {h} for a GRU or
// {h, c} for an LSTM, each [B, H]; weights as the LibTorch module holds them: w_ih [G H, I],
// w_hh [G H, H], b_ih and b_hh [G H] (G = 4 for an LSTM, 3 for a GRU). Gradients flow to the
// features, the state going in and all four weights (those that require grad). CPU float32 or
// float64 tensors only (fused_recurrence_applies); the products go to the BLAS's cblas_sgemm for
// float32 where the process has one (core::cblas_sgemm), else to LibTorch's. Backward is not
// itself differentiable (no double backward). tests/nn/fused_recurrence_test.cpp pins outputs,
// states and every gradient against the LibTorch modules stepped with resets, and the gradients
// in float64 against finite differences.
struct RecurrenceOutputs {
  at::Tensor hidden;  // h after each step, [T, B, H]
  at::Tensor cells;   // an LSTM's c after each step, [T, B, H]; undefined for a GRU
};

// Whether fused_recurrence runs on these tensors: all on the CPU, of one dtype, float32 or float64,
// and no size 0.
bool fused_recurrence_applies(const at::Tensor& features, const std::vector<at::Tensor>& state,
                              const std::vector<at::Tensor>& weights);

// weights: {w_ih, w_hh, b_ih, b_hh}. Throws std::invalid_argument, naming the shapes, where the
// shapes do not fit, and where fused_recurrence_applies is false.
RecurrenceOutputs fused_recurrence(bool lstm, const at::Tensor& features, const at::Tensor& starts,
                                   const std::vector<at::Tensor>& state, const std::vector<at::Tensor>& weights);

}  // namespace concord::nn
