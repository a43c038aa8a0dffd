#pragma once

#include <type_traits>
#include <utility>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <torch/optim/optimizer.h>

namespace concord::core {

// The key under which LibTorch's optimisers file a parameter's state: its TensorImpl's address,
// printed as a string before LibTorch 2 and the pointer itself since.
using OptimizerStateKey = std::remove_reference_t<decltype(std::declval<torch::optim::Optimizer&>().state())>::key_type;
OptimizerStateKey optimizer_state_key(const at::Tensor& parameter);

// An optimiser's state (Adam's moments and step counts, RMSprop's squares, ...) as one 1-D uint8
// tensor of LibTorch's archive bytes, so that it travels in a core::Checkpoint beside the
// parameters it belongs to. Each parameter's state is filed under the parameter's position among
// the optimiser's (its groups in order), not under its address as LibTorch's save() files it, so
// that identical runs write identical bytes (Adam, AdamW, SGD, RMSprop and Adagrad; another
// optimiser is saved by its own save()).
at::Tensor optimizer_to_bytes(const torch::optim::Optimizer& optimizer);

// Replaces `optimizer`'s state by the one in `bytes` (LibTorch's load() would keep the state of
// parameters the archive lacks, so it is cleared first); its tensors go to `device`. Reads both
// the indexed format above and LibTorch's own (checkpoints written before it). Throws
// std::invalid_argument for a state of another number of parameters than the optimiser's and for
// a tensor that is not 1-D uint8, std::runtime_error for bytes that fail
// core/torch_archive.h's checks, and LibTorch's c10::Error for an archive of another state.
void optimizer_from_bytes(const at::Tensor& bytes, torch::optim::Optimizer& optimizer, const c10::Device& device);

}  // namespace concord::core
