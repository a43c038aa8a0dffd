#pragma once

#include <torch/optim/optimizer.h>

namespace concord::algos {

// One step of `optimizer` when it is a torch::optim::Adam over a single float32, contiguous CPU
// parameter (a FlatParameters buffer) without amsgrad: the same update as Adam::step(),
//
//   m = beta1 m + (1 - beta1) g,   v = beta2 v + (1 - beta2) g^2,
//   theta = theta - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps),
//
// in one pass over the elements instead of eight LibTorch operations, each a pass of its own.
// The state is the optimiser's own (its AdamParamState: step, exp_avg, exp_avg_sq, created as
// Adam creates it), so checkpoints and a later Adam::step() carry on from it unchanged.
//
// Why by hand: LibTorch 1.13's fused Adam is CUDA-only, and a CartPole-sized update is bound by
// per-operation cost, of which Adam's operations were a large share (bench/RESULTS.md, "Learner
// micro-benchmarks"). The arithmetic is Adam's, in float; ATen's vectorised kernels may contract
// a multiply and an add where this loop does not, so results agree to rounding, not to the bit
// (tests/algos/fused_adam_test.cpp).
//
// Returns false, having done nothing, for any other optimiser or parameter (the caller then runs
// optimizer.step()), for a parameter without a gradient, and on a thread that does not flush
// denormals (core::set_flush_denormals, run.flush_denormals): there LibTorch's wider kernels
// meet denormal moments faster than this loop did (`micro_dqn_step --benchmark_filter=Adam`,
// measured before this check; its flush:0/fused:1 case now times the fallback; bench/RESULTS.md,
// "Learner micro-benchmarks").
bool fused_adam_step(torch::optim::Optimizer& optimizer);

}  // namespace concord::algos
