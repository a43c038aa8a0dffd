#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "concord/nn/flat_parameters.h"
#include "concord/sync/sync_context.h"

namespace concord::core {
struct Checkpoint;
}

namespace concord::sync {

// What a strategy communicated so far, logged beside loss and accuracy.
struct SyncStats {
  int64_t bytes = 0;   // payload bytes this rank handed to the communicator
  int64_t rounds = 0;  // communication rounds (an allreduce of all buckets, an averaging, a gossip exchange)
};

// SyncStats as metadata["sync"]["bytes" / "rounds"], so that a resumed run keeps counting.
void save_sync_stats(core::Checkpoint& checkpoint, const SyncStats& stats);
SyncStats load_sync_stats(const core::Checkpoint& checkpoint);

// How the replicas of one model on several ranks stay in agreement: allreduce of gradients every
// step, local SGD, EASGD, gossip. A training loop (an RL learner's update, `concord fit`) calls
// the hooks around each optimiser step and never learns which strategy runs:
//
//   strategy.attach(parameters);                      // once, before training
//   loop: parameters.zero_grad(); loss.backward();
//         strategy.synchronize_gradients();           // gradient() is now what to apply
//         clip; optimizer.step();
//         strategy.after_step();                      // may mix parameters across ranks
//
// Strategies are chosen by name (sync_registry.h). `none` is what a single process uses.
class SyncStrategy {
 public:
  virtual ~SyncStrategy() = default;
  virtual std::string name() const = 0;
  // Binds to the replica's flat parameters (their storage must not move afterwards) and makes
  // every replica start from the same values (rank 0's). Call once, before the first step.
  virtual void attach(nn::FlatParameters& parameters) = 0;
  // Between backward() and the optimiser step.
  virtual void synchronize_gradients() {}
  // After the optimiser step.
  virtual void after_step() {}
  virtual SyncStats stats() const { return {}; }
  // Whether every replica holds the same parameters after every step (synchronous allreduce),
  // so that a policy may check them bit for bit. Local SGD, EASGD and gossip let them drift.
  virtual bool keeps_replicas_identical() const { return false; }

  // This rank's state beyond the parameters (step counters, the centre variable, the exchange
  // generator, the stats so far), so that a run resumed from a checkpoint takes the steps the
  // uninterrupted one would have. load() comes after attach(), whose broadcast it overrides.
  // Throws core::CheckpointError (with no path) for state that does not fit.
  virtual void save(core::Checkpoint& /*checkpoint*/) const {}
  virtual void load(const core::Checkpoint& /*checkpoint*/) {}
};

// The strategy of a single replica: does nothing.
class NoSync : public SyncStrategy {
 public:
  std::string name() const override { return "none"; }
  void attach(nn::FlatParameters&) override {}
  // One replica is trivially identical to itself (none refuses several ranks).
  bool keeps_replicas_identical() const override { return true; }
};

// The strategy `none`: a NoSync, refusing several ranks (their replicas would drift apart silently).
std::unique_ptr<SyncStrategy> make_no_sync(const SyncContext& context);

}  // namespace concord::sync
