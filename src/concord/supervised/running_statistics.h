#pragma once

#include <torch/nn/module.h>
#include <torch/types.h>

#include "concord/comm/communicator.h"

namespace concord::supervised {

// The running statistics of a model's batch-norm layers: its floating-point buffers (running
// means and variances), in module order, as one flat float tensor. Models without batch norm
// have none (an empty tensor). The integer batch counters are left out: nothing reads them at a
// fixed momentum.
//
// Under data parallelism each replica normalises with its own minibatch's statistics while it
// trains (no synchronised batch norm), so each replica's running estimates come from its shard.
// `concord fit` therefore averages them across replicas before every evaluation and checkpoint,
// and federated averaging averages them with the parameters, weighted alike.
torch::Tensor running_statistics(torch::nn::Module& model);

// Writes `flat` (as returned by running_statistics for the same architecture) back into `model`.
// Throws std::invalid_argument on a size mismatch.
void load_running_statistics(torch::nn::Module& model, const torch::Tensor& flat);

// Replaces every replica's running statistics by their mean over the communicator's ranks.
// A collective; a no-op (and no communication) for a model without batch norm.
void average_running_statistics(torch::nn::Module& model, comm::Communicator& communicator);

}  // namespace concord::supervised
