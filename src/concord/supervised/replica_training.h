#pragma once

#include "concord/comm/communicator.h"
#include "concord/core/checkpoint.h"
#include "concord/data/mnist.h"
#include "concord/nn/flat_parameters.h"
#include "concord/supervised/fit_config.h"
#include "concord/supervised/fit_monitor.h"
#include "concord/sync/sync_strategy.h"

namespace concord::supervised {

// Data-parallel training with a per-step sync strategy, as one rank runs it, on the Synkhronos
// functions of parallel/ (parallel::SynchronousSgd with indexed inputs): every rank keeps the
// training set resident; rank 0 draws each step's W x B row indices and each rank receives only
// its slice of them, so no images move between ranks, only indices and what the strategy
// exchanges:
//
//   attach(parameters)                                   (rank 0's initial values everywhere)
//   each step: rows <- next W x B rows of the training set (B = fit.batch_size at first),
//                       each row once per epoch, reshuffled; rank r takes slice r
//              absa, before mid-training: the slice's first rows become FGSM examples
//              zero_grad; cross_entropy(model(x), y).backward()
//              strategy.synchronize_gradients(); SGD step; strategy.after_step()
//              (allreduce: every replica steps with the whole batch's mean gradient; local_sgd,
//               easgd, gossip: each with its own slice's, then agree as the strategy says)
//              at each epoch's end (the training set once across replicas), abs/absa:
//                lambda <- top Hessian eigenvalue on a sample, averaged over ranks
//                the schedule may double B and the learning rate (adaptive_batch_schedule.h)
//              monitor: evaluate / checkpoint / stop (fit.steps or fit.epochs reached)
//
// `model` and `parameters` are this rank's replica (parameters flattened from model). Checkpoints
// hold each rank's replica, momentum and strategy state, the schedule, the sampler's place in its
// epoch and the loop's counters; `resume_from` (this rank's part of one, replica_state.h)
// continues from there with the steps and rows the uninterrupted fit would have taken.
FitResult train_replica(const FitConfig& fit, torch::nn::Sequential& model, nn::FlatParameters& parameters,
                        sync::SyncStrategy& strategy, const data::TrainTestSplit& data,
                        comm::Communicator& communicator, const FitCallbacks& callbacks,
                        const core::Checkpoint* resume_from = nullptr);

}  // namespace concord::supervised
