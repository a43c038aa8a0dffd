#pragma once

#include "concord/comm/communicator.h"
#include "concord/data/mnist.h"
#include "concord/nn/flat_parameters.h"
#include "concord/supervised/fit_config.h"
#include "concord/supervised/fit_monitor.h"
#include "concord/sync/sync_strategy.h"

namespace concord::supervised {

// Data-parallel training with a per-step sync strategy, as one rank runs it. The training set is
// cut IID into W shards; this rank keeps its own shard resident and draws its minibatches from it
// by index, so no data moves between ranks, only what the strategy exchanges:
//
//   attach(parameters)                                   (rank 0's initial values everywhere)
//   each step: batch <- next B rows of the shard (B = fit.batch_size at first), reshuffled
//              absa, before mid-training: the batch's first rows become FGSM examples
//              zero_grad; cross_entropy(model(x), y).backward()
//              strategy.synchronize_gradients(); SGD step; strategy.after_step()
//              at each epoch's end (the training set once across replicas), abs/absa:
//                lambda <- top Hessian eigenvalue on a sample, averaged over ranks
//                the schedule may double B and the learning rate (adaptive_batch_schedule.h)
//              monitor: evaluate / checkpoint / stop (fit.steps or fit.epochs reached)
//
// `model` and `parameters` are this rank's replica (parameters flattened from model).
FitResult train_replica(const FitConfig& fit, torch::nn::Sequential& model, nn::FlatParameters& parameters,
                        sync::SyncStrategy& strategy, const data::MnistSplit& data, comm::Communicator& communicator,
                        const FitCallbacks& callbacks);

}  // namespace concord::supervised
