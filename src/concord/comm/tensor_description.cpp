#include "concord/comm/tensor_description.h"

#include <stdexcept>

#include <torch/torch.h>

#include "concord/comm/communicator.h"

namespace concord::comm {

torch::Tensor describe_tensors(const std::vector<torch::Tensor>& tensors) {
  const auto count = static_cast<int64_t>(tensors.size());
  torch::Tensor description = torch::full({count, 2 + kMaxDescribedDims}, -1, torch::kInt64);
  for (int64_t i = 0; i < count; ++i) {
    const torch::Tensor& tensor = tensors[static_cast<size_t>(i)];
    if (tensor.dim() > kMaxDescribedDims) {
      throw std::invalid_argument("a tensor to describe has " + std::to_string(tensor.dim()) + " dims, more than " +
                                  std::to_string(kMaxDescribedDims));
    }
    description[i][0] = static_cast<int64_t>(tensor.scalar_type());
    description[i][1] = tensor.dim();
    for (int64_t d = 0; d < tensor.dim(); ++d) description[i][2 + d] = tensor.size(d);
  }
  return description;
}

std::vector<torch::Tensor> allocate_described(const torch::Tensor& description, int64_t count,
                                              const std::string& refusal_prefix) {
  const auto refuse = [&](int64_t field, const std::string& problem) {
    throw CommError(refusal_prefix + ": field " + std::to_string(field) + " " + problem);
  };
  if (description.scalar_type() != torch::kInt64 || description.dim() != 2 || description.size(0) != count ||
      description.size(1) != 2 + kMaxDescribedDims || !description.is_contiguous()) {
    throw std::logic_error("allocate_described: the description buffer is not [count, 2 + kMaxDescribedDims] int64");
  }
  std::vector<torch::Tensor> buffers;
  const int64_t* row = description.data_ptr<int64_t>();
  for (int64_t field = 0; field < count; ++field, row += 2 + kMaxDescribedDims) {
    const int64_t code = row[0];
    if (code != static_cast<int64_t>(torch::kFloat32) && code != static_cast<int64_t>(torch::kFloat64) &&
        code != static_cast<int64_t>(torch::kInt64) && code != static_cast<int64_t>(torch::kUInt8)) {
      refuse(field, "has dtype code " + std::to_string(code));
    }
    if (row[1] < 0 || row[1] > kMaxDescribedDims) refuse(field, "has " + std::to_string(row[1]) + " dims");
    const auto dtype = static_cast<c10::ScalarType>(code);
    std::vector<int64_t> sizes;
    double bytes = static_cast<double>(c10::elementSize(dtype));
    for (int64_t d = 0; d < row[1]; ++d) {
      if (row[2 + d] < 0) refuse(field, "has size " + std::to_string(row[2 + d]));
      sizes.push_back(row[2 + d]);
      bytes *= static_cast<double>(row[2 + d]);
    }
    if (bytes > static_cast<double>(int64_t{1} << 30)) refuse(field, "would take over 1 GiB");
    buffers.push_back(torch::empty(sizes, torch::TensorOptions().dtype(dtype)));
  }
  return buffers;
}

}  // namespace concord::comm
