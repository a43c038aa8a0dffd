#pragma once

#include <functional>
#include <vector>

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>
#include <torch/types.h>

#include "concord/comm/communicator.h"
#include "concord/nn/flat_parameters.h"
#include "concord/parallel/data_parallel_function.h"
#include "concord/sync/sync_strategy.h"

namespace concord::parallel {

// Synchronous SGD on top of a data-parallel function, as in Synkhronos: rank 0 hands in a batch,
// every worker computes the gradient of the loss on its slice, the gradients are averaged across
// workers by a gradient-averaging SyncStrategy (the registry's bucketed `allreduce`), and every
// worker applies the same optimiser step, so the replicas stay identical.
//
//   step(batch):  zero_grad
//                 sub-slice i of worker r: g_i = d(mean loss of the slice * rows_i / N * W)
//                   (all but the last: autograd::grad, added into the gradient by hand;
//                    the last: backward(), which the strategy's hooks see)
//                 strategy.synchronize_gradients()     -> gradient = mean over all N rows
//                 optimizer.step(); strategy.after_step()
//
// The scaling makes the averaged gradient exactly the whole batch's mean-loss gradient, even when
// N does not divide by W. Only the last sub-slice runs backward(): a strategy that overlaps its
// allreduce with backward (the bucketed `allreduce`) launches a bucket as soon as backward has
// accumulated it, so every earlier contribution must already be in the gradient by then.
// A collective: every rank calls step(); only rank 0's batch is read.
class SynchronousSgd {
 public:
  // loss(slice inputs) -> the mean loss over the slice's rows (a scalar with a gradient).
  using LossFunction = std::function<torch::Tensor(const std::vector<torch::Tensor>& slice)>;

  // Attaches `strategy` to `parameters` (rank 0's values reach every replica). `optimizer` must
  // optimise parameters.values(). `strategy` must average gradients over ranks (mean, not sum).
  // `module` is the replica `parameters` was flattened from.
  SynchronousSgd(comm::Communicator& communicator, torch::nn::Module& module, nn::FlatParameters& parameters,
                 torch::optim::Optimizer& optimizer, sync::SyncStrategy& strategy, LossFunction loss,
                 std::vector<InputKind> inputs, int sub_slices = 1);

  // One synchronous step; returns the batch's mean loss before the step (on every rank).
  double step(const std::vector<torch::Tensor>& batch);

  // Makes indexed input `input` select rows of `data`, this worker's resident copy.
  void set_resident(size_t input, torch::Tensor data) { function_.set_resident(input, std::move(data)); }

 private:
  nn::FlatParameters& parameters_;
  torch::optim::Optimizer& optimizer_;
  sync::SyncStrategy& strategy_;
  DataParallelFunction function_;
};

}  // namespace concord::parallel
