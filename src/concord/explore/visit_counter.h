#pragma once

#include <string>

#include <torch/types.h>

#include "concord/comm/communicator.h"
#include "concord/core/checkpoint.h"

namespace concord::explore {

// Counts visits of binary codes (StateHash::codes rows, [N, k] uint8 in {0, 1}).
//
//   add(codes)          one more visit for every row
//   counts(codes) [N]   int64 visits of each row's code so far
//
// Thread-safe: every thread of a parallel policy adds to the one table.
class VisitCounter {
 public:
  virtual ~VisitCounter() = default;

  virtual void add(const torch::Tensor& codes) = 0;
  virtual torch::Tensor counts(const torch::Tensor& codes) const = 0;

  // Adds the visits every other rank counted since the last merge, so that all ranks hold the
  // counts of all visits (a collective: every rank calls it at the same point). Visits added
  // concurrently by this rank's other threads are kept, and counted at the next merge.
  virtual void merge_increments(comm::Communicator& communicator) = 0;

  virtual void save(core::Checkpoint& checkpoint, const std::string& prefix) const = 0;
  // Throws core::CheckpointError naming a missing or mis-shaped tensor.
  virtual void load(const core::Checkpoint& checkpoint, const std::string& prefix) = 0;
};

}  // namespace concord::explore
