#pragma once

#include <cstdint>

#include <torch/types.h>

namespace concord::sync {

// The bytes a tensor's elements occupy: what a strategy adds to SyncStats::bytes for each
// tensor it hands to the communicator.
inline int64_t payload_bytes(const torch::Tensor& tensor) {
  return tensor.numel() * static_cast<int64_t>(tensor.element_size());
}

}  // namespace concord::sync
