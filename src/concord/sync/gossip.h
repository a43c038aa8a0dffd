#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/types.h>

#include "concord/comm/communicator.h"
#include "concord/core/config_fields.h"
#include "concord/core/rng.h"
#include "concord/sync/sync_context.h"
#include "concord/sync/sync_strategy.h"

namespace concord::sync {

struct GossipConfig {
  double probability = 0.2;  // p: chance that a replica pushes to a peer after a step
  uint64_t seed = 1;         // the exchange pattern's seed; the same on every rank

  // Keys sync.gossip.<field>; the seed is not one (make_gossip takes run.seed).
  static const core::ConfigFields<GossipConfig>& fields();
  // Throws std::invalid_argument listing every bad field.
  void validate() const;
};

// GoSGD (Blot et al. 2016): decentralised gossip averaging, no master. Each replica i carries a
// weight w_i (initially 1/W, summing to 1 over replicas). After each step, with probability p, it
// pushes to a peer j drawn uniformly among the others:
//
//   sender i:    w_i <- w_i / 2;  send (x_i, w_i)
//   receiver j:  x_j <- (w_j x_j + w_i x_i) / (w_j + w_i);  w_j <- w_j + w_i      (gossip_mix)
//
// so the weighted mean of the replicas is unchanged by every exchange. Deadlock freedom: every
// rank draws every rank's decision from one generator seeded alike, so each knows who sends to
// it this step; sends are posted asynchronously first, then the expected messages are received
// in sender-rank order. Every rank must call after_step the same number of times.
class Gossip : public SyncStrategy {
 public:
  // Throws std::invalid_argument, printing the value, when p is outside [0, 1].
  Gossip(comm::Communicator& communicator, GossipConfig config);

  std::string name() const override { return "gossip"; }
  void attach(nn::FlatParameters& parameters) override;
  void after_step() override;
  SyncStats stats() const override { return stats_; }
  // The shared exchange generator, this rank's weight and the stats.
  void save(core::Checkpoint& checkpoint) const override;
  void load(const core::Checkpoint& checkpoint) override;

  double weight() const { return weight_; }
  // This step's pattern: targets[i] is the peer rank i pushes to, or -1 when it keeps quiet.
  // Advances the shared generator; after_step calls it once per step.
  std::vector<int> draw_exchanges();

 private:
  comm::Communicator& communicator_;
  GossipConfig config_;
  core::Rng rng_;
  nn::FlatParameters* parameters_ = nullptr;
  double weight_;
  SyncStats stats_;
};

// The receiver's rule: x <- (w x + w_s x_s) / (w + w_s) in place; returns w + w_s.
double gossip_mix(const torch::Tensor& x, double w, const torch::Tensor& x_sent, double w_sent);

// A Gossip seeded from run.seed, so that every rank derives the same exchange pattern.
std::unique_ptr<SyncStrategy> make_gossip(const SyncContext& context, const GossipConfig& config);

}  // namespace concord::sync
