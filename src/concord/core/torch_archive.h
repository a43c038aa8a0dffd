#pragma once

#include <cstddef>
#include <map>
#include <string>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include "concord/core/tensor_map.h"

namespace torch::serialize {
class InputArchive;
}

namespace concord::core {

// Reading LibTorch's zip archives (torch::serialize::OutputArchive's format) from bytes that may be
// crafted: a checkpoint's payload, an optimiser's state inside a checkpoint.
//
// LibTorch's own reader learns the class of every pickled module by compiling the TorchScript source
// stored beside the pickle (code/), and its compiler crashes on crafted source (the checkpoint
// fuzzer found one); its unpickler also takes tensor sizes and strides without checking them
// against the storage it read, and its zip reader allocates whatever size a record claims.
// Concord's archives hold modules whose attributes are tensors and plain values, nothing else, so
// these readers first refuse any record claiming more bytes than the archive, unpickle with a
// resolver that knows only such module classes, refuse type annotations, and check every tensor
// against its storage.

// The tensors of an archive of one module whose attributes are tensors, by attribute name. Throws
// std::exception, with one line naming the problem, for anything else.
TensorMap read_tensor_archive(const char* data, std::size_t size);

// Loads an archive of nested modules and values (an optimiser's state, written by its save()) into
// `archive`, after the checks above and after checking that every source file in it only declares
// attributes, as LibTorch writes them for such modules: the compiler never sees anything else.
// Throws std::exception, with one line naming the problem.
void load_checked_archive(torch::serialize::InputArchive& archive, const char* data, std::size_t size,
                          const c10::Device& device);

}  // namespace concord::core
