#pragma once

#include <cstdint>
#include <string>

#include "concord/comm/communicator.h"
#include "concord/core/config_fields.h"
#include "concord/sync/sync_context.h"
#include "concord/sync/sync_strategy.h"

namespace concord::sync {

struct LocalSgdConfig {
  int64_t local_steps = 8;   // H: optimiser steps each replica takes alone between two averages
  int64_t warmup_steps = 0;  // post-local SGD: steps of synchronous SGD (gradient allreduce) first

  // Keys sync.local_sgd.<field>.
  static const core::ConfigFields<LocalSgdConfig>& fields();
  // Throws std::invalid_argument listing every bad field.
  void validate() const;
};

// Local SGD (Lin et al. 2018): replicas step on their own data and average their parameters every
// H steps; with warmup_steps > 0, post-local SGD, which runs synchronous SGD (gradients averaged
// every step) for the warm-up and switches to local SGD after it.
//
//   step t <= warmup:  synchronize_gradients: g <- mean over ranks of g          (1 round)
//   step t >  warmup:  after_step, every H-th step since the warm-up:
//                      x <- mean over ranks of x                                  (1 round)
//
// Every rank must call the hooks the same number of times. Not thread-safe; one per rank.
class LocalSgd : public SyncStrategy {
 public:
  // Throws std::invalid_argument, printing the values, when local_steps < 1 or warmup_steps < 0.
  LocalSgd(comm::Communicator& communicator, LocalSgdConfig config);

  std::string name() const override { return "local_sgd"; }
  void attach(nn::FlatParameters& parameters) override;
  void synchronize_gradients() override;
  void after_step() override;
  SyncStats stats() const override { return stats_; }
  // The step count (where the warm-up ends and the next average falls) and the stats.
  void save(core::Checkpoint& checkpoint) const override;
  void load(const core::Checkpoint& checkpoint) override;

 private:
  bool in_warmup() const { return steps_ < config_.warmup_steps; }

  comm::Communicator& communicator_;
  LocalSgdConfig config_;
  nn::FlatParameters* parameters_ = nullptr;
  int64_t steps_ = 0;
  SyncStats stats_;
};

std::unique_ptr<SyncStrategy> make_local_sgd(const SyncContext& context, const LocalSgdConfig& config);

}  // namespace concord::sync
