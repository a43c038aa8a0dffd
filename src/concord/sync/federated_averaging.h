#pragma once

#include <cstdint>
#include <vector>

#include <torch/types.h>

#include "concord/comm/communicator.h"
#include "concord/core/rng.h"
#include "concord/sync/sync_strategy.h"

namespace concord::sync {

struct FederatedAveragingConfig {
  int clients = 100;      // K
  double fraction = 0.1;  // C: the share of clients that train in a round (at least one does)
  uint64_t seed = 1;      // the client draw's seed; the same on every rank

  // Throws std::invalid_argument listing every bad field.
  void validate() const;
};

// The server side of federated averaging (McMahan et al. 2017), spread over the W ranks of a
// communicator that simulate the K clients between them (client k lives on rank k mod W). It is
// round-structured rather than a per-step SyncStrategy, because a round is not a step: the
// training loop (supervised/federated_training.h) asks it which clients train, trains those it
// owns for E local epochs from the global model, and hands back their data-size-weighted sum:
//
//   round:  S <- select_clients()                      (the same max(1, round(C K)) clients on every rank)
//           each rank: sum_r = sum over its k in S of n_k x_k,  weight_r = sum n_k
//           x <- average(sum_r, weight_r) = sum_k n_k x_k / sum_k n_k        (one allreduce)
//
// FedSGD is the same round with one full-batch gradient step per client (E = 1, B = infinity).
// Not thread-safe; one per rank, and every rank calls both functions once per round.
class FederatedAveraging {
 public:
  // Throws std::invalid_argument, printing the values, for clients < 1 or fraction outside (0, 1].
  FederatedAveraging(comm::Communicator& communicator, FederatedAveragingConfig config);

  // This round's clients, ascending. Advances the shared generator.
  std::vector<int> select_clients();
  bool owns(int client) const { return client % communicator_.world_size() == communicator_.rank(); }
  int clients_per_round() const { return clients_per_round_; }

  // weighted_sum (this rank's sum of n_k x_k, possibly zero) <- the global weighted average,
  // identical on every rank. Throws std::runtime_error when no rank contributed any weight.
  void average(const torch::Tensor& weighted_sum, double weight);

  SyncStats stats() const { return stats_; }

  // The client draw's generator and the stats, so that a resumed run draws the clients the
  // uninterrupted one would have. load() throws core::CheckpointError (with no path).
  void save(core::Checkpoint& checkpoint) const;
  void load(const core::Checkpoint& checkpoint);

 private:
  comm::Communicator& communicator_;
  FederatedAveragingConfig config_;
  int clients_per_round_;
  core::Rng rng_;
  SyncStats stats_;
};

}  // namespace concord::sync
