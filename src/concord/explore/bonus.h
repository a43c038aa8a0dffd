#pragma once

#include <torch/types.h>

#include "concord/comm/communicator.h"
#include "concord/core/checkpoint.h"

namespace concord::explore {

// The Bonus fragment: an intrinsic reward added to the environment's before learning. A
// distribution policy applies it where experience is collected, to every batch of visited
// states, and the learner sees only the sum; algorithms never know it exists:
//
//   bonus = bonus.visit(states of the batch)     counts the batch first, then rewards novelty
//   rewards_for_learning = env rewards + bonus   (episode returns stay the env's own)
//
// One instance serves every actor of a run: visit() is thread-safe, so threads share the counts;
// processes share them by calling merge_counts() at the same points.
class Bonus {
 public:
  virtual ~Bonus() = default;

  // observations [N, obs_dim] float (any device) -> bonus [N] float32 on the CPU.
  virtual torch::Tensor visit(const torch::Tensor& observations) = 0;
  // A collective over the communicator's ranks: afterwards every rank counts every rank's visits.
  virtual void merge_counts(comm::Communicator& communicator) = 0;

  // Everything needed to continue counting (hash parameters, counts) under "explore/...".
  virtual void save(core::Checkpoint& checkpoint) const = 0;
  // Throws core::CheckpointError naming what is missing or mis-shaped.
  virtual void load(const core::Checkpoint& checkpoint) = 0;
};

}  // namespace concord::explore
