#pragma once

#include <mutex>

#include <torch/optim/optimizer.h>
#include <torch/types.h>

#include "concord/nn/flat_parameters.h"
#include "concord/sync/sync_strategy.h"

namespace concord::algos {

// One optimiser step on `loss`, the same in every learner:
//
//   g = d loss / d theta                      (into parameters.gradient())
//   g = sync(g)                               (e.g. the mean over ranks; nothing in one process)
//   g = g * min(1, max_grad_norm / ||g||)     (global norm clipping; none for an infinite
//                                              max_grad_norm, where the factor is 1)
//   theta = optimizer.step(theta, g)        (Adam on one flat parameter: fused_adam_step)
//   theta = sync.after_step(theta)            (e.g. local SGD's periodic average)
//
// Synchronising before clipping makes every replica clip the same gradient, so replicas in
// lockstep stay identical.
// torch::nn::utils::clip_grad_norm_ on one flat gradient, in place: the same arithmetic (the
// norm, max_norm / (norm + 1e-6) clamped to at most 1, one multiply) in 5 operations instead of
// 18, without its per-parameter bookkeeping and without reading the norm back to the host, which
// would wait for a device.
void clip_gradient_norm(const torch::Tensor& gradient, double max_norm);

//
// With `step_lock`, the optimiser's step (only) runs under it: for replicas on several threads that
// step one set of shared parameters and statistics (hogwild). LibTorch's optimisers step in
// several passes over the statistics, and a read-modify-write lost between two threads leaves
// Adam's first moment with a gradient its second moment lacks, or RMSprop's divisor without the
// gradient it divides: steps many times too large (Q-values went from 0.2 to 5e4 in one step
// under hogwild at a rate of 1e-6).
void gradient_step(const torch::Tensor& loss, nn::FlatParameters& parameters, torch::optim::Optimizer& optimizer,
                   double max_grad_norm, sync::SyncStrategy& sync, std::mutex* step_lock = nullptr);

}  // namespace concord::algos
