#pragma once

#include <string>
#include <vector>

#include <torch/types.h>

namespace concord::comm {

// How a rank tells another the dtypes and shapes of the tensors it will send, so that the
// receiver can allocate its buffers once (c10d's send/recv need matching buffers on both sides).
// A description is an int64 tensor [n, 2 + kMaxDescribedDims]: per tensor its dtype code, its
// number of dims, then its sizes (-1 padded).
inline constexpr int kMaxDescribedDims = 6;  // [T, B, H, W, C] grid observations need 5

// Throws std::invalid_argument if a tensor has more than kMaxDescribedDims dims.
torch::Tensor describe_tensors(const std::vector<torch::Tensor>& tensors);

// An empty buffer for each of the `count` tensors that `description` (as received) describes.
// Another process's message is checked before it sizes anything: a dtype experience can hold
// (float32, float64, int64, uint8), at most kMaxDescribedDims non-negative sizes, at most 1 GiB per
// tensor. Throws CommError "<refusal_prefix>: field <i> ..." otherwise.
std::vector<torch::Tensor> allocate_described(const torch::Tensor& description, int64_t count,
                                              const std::string& refusal_prefix);

}  // namespace concord::comm
