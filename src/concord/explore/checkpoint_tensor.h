#pragma once

#include <string>
#include <vector>

#include <torch/types.h>

#include "concord/core/checkpoint.h"

namespace concord::explore {

// The tensor `name` of a checkpoint, which must have `shape`. Throws core::CheckpointError
// naming the tensor, the shape expected and `hint` (which setting would explain a mismatch).
torch::Tensor required_tensor(const core::Checkpoint& checkpoint, const std::string& name,
                              const std::vector<int64_t>& shape, const std::string& hint);

}  // namespace concord::explore
