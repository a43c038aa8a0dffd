#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <torch/optim/optimizer.h>

namespace concord::core {

// An optimiser's state (Adam's moments and step counts, RMSprop's squares, ...) as one 1-D uint8
// tensor of LibTorch's archive bytes, so that it travels in a core::Checkpoint beside the
// parameters it belongs to.
at::Tensor optimizer_to_bytes(const torch::optim::Optimizer& optimizer);

// Replaces `optimizer`'s state by the one in `bytes` (LibTorch's load() would keep the state of
// parameters the archive lacks, so it is cleared first); its tensors go to `device`. Throws
// std::invalid_argument for a tensor that is not 1-D uint8, std::runtime_error for bytes that fail
// core/torch_archive.h's checks, and LibTorch's c10::Error for an archive of another state.
void optimizer_from_bytes(const at::Tensor& bytes, torch::optim::Optimizer& optimizer, const c10::Device& device);

}  // namespace concord::core
