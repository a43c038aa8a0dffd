#pragma once

#include <torch/nn/module.h>
#include <torch/optim/sgd.h>

#include "concord/comm/communicator.h"
#include "concord/core/checkpoint.h"
#include "concord/nn/flat_parameters.h"

namespace concord::supervised {

// A fit checkpoint holds every rank's own state, because replicas drift apart between syncs
// (local SGD, EASGD, gossip) and each carries its own momentum and strategy state:
//
//   tensors  "rank<r>/<name>"     rank r's tensors (parameters, optimizer.momentum, sync.centre, ...)
//   metadata "ranks": [m_0, ...]  rank r's metadata sections (loop, monitor, schedule, sync, sampler)
//            "workers": W
//
// Each rank fills a core::Checkpoint of its own through its components' save(); rank 0 gathers
// them over the communicator, and on resume each rank takes its part back with replica_state().

// Collective: every rank hands in its own state; rank 0 gets the merged checkpoint, the others an
// empty one. Rank 0 receives each rank's tensors by point-to-point messages, one rank at a time.
core::Checkpoint gather_replica_states(comm::Communicator& communicator, const core::Checkpoint& mine);

// Rank `rank`'s state from a merged checkpoint saved by `world_size` ranks. Throws
// core::CheckpointError (with no path) when it holds no replica states or those of another
// number of ranks.
core::Checkpoint replica_state(const core::Checkpoint& merged, int rank, int world_size);

// A replica's own tensors: its flat parameters, its batch-norm statistics (if any) and its SGD
// momentum buffer (once the first step has made one). load_replica checks every tensor before it
// changes anything; it throws core::CheckpointError (with no path).
void save_replica(core::Checkpoint& checkpoint, torch::nn::Module& model, const nn::FlatParameters& parameters,
                  torch::optim::SGD& optimizer);
void load_replica(const core::Checkpoint& checkpoint, torch::nn::Module& model, nn::FlatParameters& parameters,
                  torch::optim::SGD& optimizer);

}  // namespace concord::supervised
