#pragma once

#include <cstdint>
#include <string>

#include <torch/types.h>

#include "concord/core/checkpoint.h"

namespace concord::explore {

// Maps states to binary codes whose visits are counted (the phi of Tang et al., 2017):
//
//   learn(batch of visited states)     a learned hash trains on them; a fixed hash ignores them
//   codes(states) -> bits [N, k]       uint8 values in {0, 1}
//
// Implementations are thread-safe: the threads of a parallel policy share one hash.
class StateHash {
 public:
  virtual ~StateHash() = default;

  // observations [N, obs_dim] float32 on the CPU.
  virtual void learn(const torch::Tensor& observations) = 0;
  // observations [N, obs_dim] float32 on the CPU -> [N, bits()] uint8 in {0, 1}.
  virtual torch::Tensor codes(const torch::Tensor& observations) = 0;
  virtual int64_t bits() const = 0;

  // What defines the hash (projection matrix, autoencoder weights) under names starting with
  // `prefix`; load() throws core::CheckpointError naming a missing or mis-shaped tensor.
  virtual void save(core::Checkpoint& checkpoint, const std::string& prefix) const = 0;
  virtual void load(const core::Checkpoint& checkpoint, const std::string& prefix) = 0;
};

}  // namespace concord::explore
