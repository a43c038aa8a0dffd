#pragma once

#include "concord/comm/communicator.h"
#include "concord/core/checkpoint.h"
#include "concord/data/mnist.h"
#include "concord/nn/flat_parameters.h"
#include "concord/supervised/fit_config.h"
#include "concord/supervised/fit_monitor.h"

namespace concord::supervised {

// Federated averaging (McMahan et al. 2017), or FedSGD (E = 1, B = infinity), with the K clients
// simulated by the W ranks (client k on rank k mod W). The training set is divided among the
// clients IID or non-IID (label-sorted shards, two per client); each client's data stays on its
// rank. Per round, over sync::FederatedAveraging:
//
//   S <- C K clients drawn alike on every rank
//   for each client k in S on this rank:  x_k <- x;  E epochs of SGD with batch B on its data
//                                          sum += n_k x_k;  weight += n_k
//   x <- sum over ranks / weight over ranks                  (one allreduce)
//
// `model`/`parameters` is this rank's copy of the global model (parameters flattened from it).
// Checkpoints hold the global model, the round, and the server's client draw; `resume_from` (this
// rank's part of one, replica_state.h) continues with the clients the uninterrupted run would
// have drawn. Clients need nothing more: each round starts them from the global model, with plain
// SGD and batches seeded by the round.
FitResult train_federated(const FitConfig& fit, torch::nn::Sequential& model, nn::FlatParameters& parameters,
                          const data::TrainTestSplit& data, comm::Communicator& communicator,
                          const FitCallbacks& callbacks, const core::Checkpoint* resume_from = nullptr);

}  // namespace concord::supervised
