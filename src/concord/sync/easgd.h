#pragma once

#include <cstdint>
#include <string>

#include <torch/types.h>

#include "concord/comm/communicator.h"
#include "concord/core/config_fields.h"
#include "concord/sync/sync_context.h"
#include "concord/sync/sync_strategy.h"

namespace concord::sync {

struct EasgdConfig {
  double alpha = 0.2;         // elastic coefficient (the paper's alpha = eta * rho)
  int64_t tau = 4;            // optimiser steps between two elastic exchanges
  bool asynchronous = false;  // the asynchronous update rule (one worker at a time) instead of the synchronous one
  double momentum = 0.0;      // delta of EAMSGD's Nesterov momentum; 0 is plain EASGD

  // Throws std::invalid_argument listing every bad field; `workers` bounds the synchronous alpha.
  void validate(int workers) const;
  // Keys sync.easgd.<field>.
  static const core::ConfigFields<EasgdConfig>& fields();
};

// Elastic averaging SGD (Zhang, Choromanska, LeCun 2015). Every replica keeps its own parameters
// x_i, elastically linked to a centre variable x~ which starts at rank 0's initial parameters.
// Every tau steps (after_step):
//
//   synchronous:   d_i = x_i - x~;  x_i <- x_i - alpha d_i;  x~ <- x~ + alpha sum_i d_i
//                  (one allreduce of d; every rank keeps an identical copy of x~)
//   asynchronous:  x~ lives on rank 0. Worker i sends x_i and receives x~ (its current value);
//                  both move by the same d_i = x_i - x~: x_i <- x_i - alpha d_i at the worker,
//                  x~ <- x~ + alpha d_i at rank 0, one worker after the other (rank 0 serves
//                  ranks 1..W-1 in order, then itself). No worker waits for another worker.
//
// EAMSGD (momentum > 0) replaces each local gradient g by Nesterov's g + delta v, v <- delta v + g,
// in synchronize_gradients; use it with a plain-SGD optimiser (no momentum of its own).
//
// Stability: the synchronous centre update is a convex combination only when W * alpha <= 1, and
// every elastic step needs 0 < alpha < 1; other values are refused at construction.
//
// Rank 0 serving the asynchronous exchanges in a fixed order, rather than whichever worker
// arrives first, is deliberate: Communicator has no receive-from-any-source, and the fixed order
// makes runs reproducible. Every rank must call after_step the same number of times.
class Easgd : public SyncStrategy {
 public:
  // Throws std::invalid_argument, printing the values, for alpha outside (0, 1), W * alpha > 1
  // (synchronous), tau < 1 or momentum outside [0, 1).
  Easgd(comm::Communicator& communicator, EasgdConfig config);

  std::string name() const override { return "easgd"; }
  void attach(nn::FlatParameters& parameters) override;
  void synchronize_gradients() override;
  void after_step() override;
  SyncStats stats() const override { return stats_; }
  // The step count, this rank's copy of the centre variable (asynchronous: rank 0's is the one
  // that counts), EAMSGD's velocity and the stats.
  void save(core::Checkpoint& checkpoint) const override;
  void load(const core::Checkpoint& checkpoint) override;

  // The centre variable x~ as this rank knows it (asynchronous: current only on rank 0).
  const torch::Tensor& centre() const { return centre_; }

 private:
  void synchronous_exchange();
  void asynchronous_exchange();

  comm::Communicator& communicator_;
  EasgdConfig config_;
  nn::FlatParameters* parameters_ = nullptr;
  torch::Tensor centre_;
  torch::Tensor velocity_;
  int64_t steps_ = 0;
  SyncStats stats_;
};

std::unique_ptr<SyncStrategy> make_easgd(const SyncContext& context, const EasgdConfig& config);

}  // namespace concord::sync
