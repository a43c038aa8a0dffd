#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "concord/comm/communicator.h"
#include "concord/core/config_fields.h"
#include "concord/sync/sync_context.h"
#include "concord/sync/sync_strategy.h"

namespace concord::sync {

// How `allreduce` buckets the gradient (keys sync.allreduce.<field>).
struct GradientAllreduceConfig {
  int64_t bucket_kb = 1024;  // bucket size in KiB; 0: one bucket

  // Throws std::invalid_argument listing every bad field with its value.
  void validate() const;
  static const core::ConfigFields<GradientAllreduceConfig>& fields();
};

// Synchronous data parallelism (`allreduce`): every optimiser step applies the mean of all
// ranks' gradients, so replicas stay identical. As in PyTorch DDP, the flat gradient is cut
// into buckets of about `bucket_bytes`, in reverse parameter order (the order backward produces
// them), and a bucket's allreduce starts as soon as its last gradient is accumulated, while
// backward computes the next ones:
//
//   backward:   [grad bucket 2] [grad bucket 1] [grad bucket 0]
//   allreduce:                  [  bucket 2   ] [  bucket 1   ] [bucket 0]
//   synchronize_gradients(): launch buckets that got no gradient, wait for all, divide by W
//
// Buckets start strictly in order (bucket i waits for i - 1 to start), so every rank issues
// the same sequence of collectives. Gradient hooks sit on the parameters' gradient
// accumulators, which this object keeps alive.
class GradientAllreduce : public SyncStrategy {
 public:
  // bucket_bytes <= 0: one bucket (no overlap).
  GradientAllreduce(comm::Communicator& communicator, int64_t bucket_bytes);
  ~GradientAllreduce() override;

  std::string name() const override { return "allreduce"; }
  void attach(nn::FlatParameters& parameters) override;
  void synchronize_gradients() override;
  SyncStats stats() const override { return stats_; }
  bool keeps_replicas_identical() const override { return true; }
  // Only the stats: the buckets are rebuilt by attach().
  void save(core::Checkpoint& checkpoint) const override { save_sync_stats(checkpoint, stats_); }
  void load(const core::Checkpoint& checkpoint) override { stats_ = load_sync_stats(checkpoint); }

  // Buckets as [begin, end) element ranges of the flat gradient, in launch order.
  const std::vector<std::pair<int64_t, int64_t>>& buckets() const { return bucket_ranges_; }

 private:
  struct Hooks;
  void on_gradient_ready(size_t bucket);
  void launch_ready_buckets(bool force);

  comm::Communicator& communicator_;
  int64_t bucket_bytes_;
  nn::FlatParameters* parameters_ = nullptr;
  std::vector<std::pair<int64_t, int64_t>> bucket_ranges_;
  std::vector<int> bucket_parameters_;  // parameters per bucket
  std::vector<int> pending_;            // gradients still to come in this backward, per bucket
  std::vector<std::unique_ptr<comm::Request>> requests_;
  size_t next_to_launch_ = 0;
  std::unique_ptr<Hooks> hooks_;
  SyncStats stats_;
};

std::unique_ptr<SyncStrategy> make_gradient_allreduce(const SyncContext& context,
                                                      const GradientAllreduceConfig& config);

}  // namespace concord::sync
