#pragma once

#include <cstdint>
#include <vector>

#include <torch/nn/module.h>
#include <torch/types.h>

namespace concord::nn {

// All parameters of a module moved into one contiguous buffer, with their gradients in a second
// one. Each parameter keeps its own tensor object (and name) but its storage becomes a slice of
// the flat buffer, and its .grad a slice of the flat gradient, which backward() accumulates into
// in place.
//
//   module params p_0 [3, 4], p_1 [3]  ->  values()   [15] = | p_0 (12) | p_1 (3) |
//                                          gradient() [15] = | dp_0     | dp_1    |
//
// Why: an optimiser, a gradient-norm clip, an allreduce or a parameter broadcast over one
// tensor is one operation instead of one per parameter. For the small networks of classic
// control that per-operation overhead, not arithmetic, bounds training speed; across processes
// the flat gradient is the allreduce bucket.
//
// Hand `values()` to a LibTorch optimiser as its only parameter: it is a leaf whose grad() is
// gradient(). Build the module on its final device first: moving it afterwards (module->to())
// gives its parameters new storage and breaks the aliasing.
class FlatParameters {
 public:
  FlatParameters() = default;
  explicit FlatParameters(torch::nn::Module& module);
  // Flattens `module` (of the same architecture as shared's) onto shared's value storage instead
  // of a new buffer: both modules then read and write the same parameters (its values are
  // overwritten), while each keeps its own gradient. Throws std::invalid_argument on a size,
  // device or dtype mismatch.
  FlatParameters(torch::nn::Module& module, const FlatParameters& shared);

  // The flat parameter (a leaf tensor whose grad() is gradient()).
  const torch::Tensor& values() const { return values_; }
  // The flat gradient, accumulated into by backward().
  const torch::Tensor& gradient() const { return gradient_; }
  // Zeroes the flat gradient in one operation.
  void zero_grad() { gradient_.zero_(); }
  int64_t numel() const { return values_.defined() ? values_.numel() : 0; }
  // The module's parameter tensors, in buffer order: parameters()[i] occupies
  // values().narrow(0, offset(i), parameters()[i].numel()). For hooks on their gradients.
  const std::vector<torch::Tensor>& parameters() const { return parameters_; }
  int64_t offset(size_t index) const { return offsets_.at(index); }

 private:
  // Points every parameter of `module` at its slice of `storage` and of a new gradient buffer.
  void bind(torch::nn::Module& module, const torch::Tensor& storage);

  torch::Tensor values_;
  torch::Tensor gradient_;
  std::vector<torch::Tensor> parameters_;
  std::vector<int64_t> offsets_;
};

}  // namespace concord::nn
