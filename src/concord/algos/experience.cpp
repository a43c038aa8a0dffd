#include "concord/algos/experience.h"

#include <ATen/ops/cat.h>

#include <stdexcept>
#include <utility>

namespace concord::algos {

at::Tensor on_device(const at::Tensor& t, c10::Device device) { return t.device() == device ? t : t.to(device); }

TensorMap to_device(const TensorMap& experience, c10::Device device, bool copy) {
  TensorMap moved;
  for (const auto& [name, tensor] : experience) {
    if (!tensor.defined() || (!copy && tensor.device() == device)) {
      moved[name] = tensor;
    } else {
      moved[name] = tensor.to(device, /*non_blocking=*/false, copy);
    }
  }
  return moved;
}

TensorMap clone(const TensorMap& experience) {
  TensorMap copy;
  for (const auto& [name, tensor] : experience) copy[name] = tensor.defined() ? tensor.clone() : tensor;
  return copy;
}

TensorMap slice(const TensorMap& experience, int64_t dim, int64_t start, int64_t length) {
  TensorMap part;
  for (const auto& [name, tensor] : experience)
    part[name] = tensor.defined() ? tensor.narrow(dim, start, length) : tensor;
  return part;
}

TensorMap cat(const std::vector<TensorMap>& parts, int64_t dim) {
  if (parts.empty()) return {};
  TensorMap joined;
  for (const auto& [name, first] : parts.front()) {
    std::vector<at::Tensor> pieces;
    for (const TensorMap& part : parts) {
      const auto found = part.find(name);
      if (found == part.end() || part.size() != parts.front().size()) {
        throw std::invalid_argument("experience cat: the parts do not have the same fields (field '" + name +
                                    "' is missing from one, or one has extra fields)");
      }
      if (found->second.defined()) pieces.push_back(found->second);
    }
    joined[name] = pieces.empty() ? first : at::cat(pieces, dim);
  }
  return joined;
}

int64_t common_size(const TensorMap& experience, int64_t dim) {
  int64_t size = -1;
  std::string first;
  for (const auto& [name, tensor] : experience) {
    if (!tensor.defined()) continue;
    if (tensor.dim() <= dim) {
      throw std::invalid_argument("experience field '" + name + "' has " + std::to_string(tensor.dim()) +
                                  " dimensions, fewer than " + std::to_string(dim + 1));
    }
    if (size < 0) {
      size = tensor.size(dim);
      first = name;
    } else if (tensor.size(dim) != size) {
      throw std::invalid_argument("experience field '" + name + "' has size " + std::to_string(tensor.size(dim)) +
                                  " in dimension " + std::to_string(dim) + " but '" + first + "' has " +
                                  std::to_string(size));
    }
  }
  if (size < 0) throw std::invalid_argument("experience has no defined field");
  return size;
}

}  // namespace concord::algos
