#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/types.h>

#include "concord/core/rng.h"

namespace concord::core {
struct Checkpoint;
}

namespace concord::data {

// Minibatches of row indices over epochs: each epoch visits every row of [0, size) once, in a
// fresh order drawn from core::Rng; the last batch of an epoch may be shorter. batch_size 0
// means the whole set as one batch (FedSGD's B = infinity). Not thread-safe.
class ShuffledBatches {
 public:
  // Throws std::invalid_argument when size < 1 or batch_size < 0.
  ShuffledBatches(int64_t size, int64_t batch_size, uint64_t seed);

  // The next batch's indices, int64 [<= batch_size].
  torch::Tensor next();
  // Batches in one epoch.
  int64_t batches_per_epoch() const { return (size_ + batch_size_ - 1) / batch_size_; }

  // Where in which order it is, as metadata[name] and tensor "<name>.order", so that a resumed
  // run continues the epoch it was in instead of reshuffling. load() throws core::CheckpointError
  // (with no path) for state of another size or batch size.
  void save(core::Checkpoint& checkpoint, const std::string& name) const;
  void load(const core::Checkpoint& checkpoint, const std::string& name);

 private:
  void reshuffle();

  int64_t size_;
  int64_t batch_size_;
  core::Rng rng_;
  std::vector<int64_t> order_;
  int64_t position_ = 0;
};

}  // namespace concord::data
