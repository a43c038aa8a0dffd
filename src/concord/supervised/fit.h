#pragma once

#include <string>

#include "concord/comm/communicator.h"
#include "concord/core/checkpoint.h"
#include "concord/core/config.h"
#include "concord/data/mnist.h"
#include "concord/supervised/fit_config.h"
#include "concord/supervised/fit_monitor.h"

namespace concord::supervised {

// Builds (and discards) the strategy fit.strategy names for fit.workers ranks, so that a bad
// sync.* key is refused before anything starts. Throws std::invalid_argument naming it.
void check_strategy(const FitConfig& fit, const core::Config& config);

// Trains this rank's replica of fit.model: builds it (seeded with fit.seed, so replicas start
// alike even before a strategy broadcasts), then runs the federated loop for fedavg/fedsgd or the
// per-step loop with the named sync strategy (its keys sync.<name>.* read from `config`).
// A collective over `communicator`; callbacks fire on rank 0. Throws std::invalid_argument for
// an unknown strategy.
//
// `resume_from`, a checkpoint that on_checkpoint received (every rank's state), continues that
// fit where it stopped: each rank takes its own part back, and the fit ends as the uninterrupted
// one would have, bit for bit where its arithmetic is deterministic. Throws core::CheckpointError
// (with no path) for a checkpoint of another number of ranks, model or strategy.
FitResult fit_replica(const FitConfig& fit, const core::Config& config, const data::TrainTestSplit& data,
                      comm::Communicator& communicator, const FitCallbacks& callbacks,
                      const core::Checkpoint* resume_from = nullptr);

// fit_replica on fit.workers threads of this process joined by a comm::ThreadGroup; returns rank
// 0's result. The first error of any worker is rethrown (preferring a cause over the timeouts it
// leaves the other workers with).
FitResult fit_with_threads(const FitConfig& fit, const core::Config& config, const data::TrainTestSplit& data,
                           const FitCallbacks& callbacks, const core::Checkpoint* resume_from = nullptr);

}  // namespace concord::supervised
