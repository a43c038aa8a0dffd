#include "concord/core/optimizer_bytes.h"

#include <ATen/ops/empty.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>
#include <torch/version.h>

#include <cstring>
#include <sstream>
#include <stdexcept>
#include <string>

#include "concord/core/torch_archive.h"

namespace concord::core {

OptimizerStateKey optimizer_state_key(const at::Tensor& parameter) {
#if TORCH_VERSION_MAJOR >= 2
  return parameter.unsafeGetTensorImpl();
#else
  return c10::guts::to_string(parameter.unsafeGetTensorImpl());
#endif
}

at::Tensor optimizer_to_bytes(const torch::optim::Optimizer& optimizer) {
  torch::serialize::OutputArchive archive;
  optimizer.save(archive);
  std::ostringstream stream;
  archive.save_to(stream);
  const std::string bytes = stream.str();
  at::Tensor tensor = at::empty({static_cast<int64_t>(bytes.size())}, at::kByte);
  std::memcpy(tensor.data_ptr<uint8_t>(), bytes.data(), bytes.size());
  return tensor;
}

void optimizer_from_bytes(const at::Tensor& bytes, torch::optim::Optimizer& optimizer, const c10::Device& device) {
  if (bytes.scalar_type() != at::kByte || bytes.dim() != 1) {
    throw std::invalid_argument("expected a 1-D uint8 tensor");
  }
  const at::Tensor contiguous = bytes.to(at::kCPU).contiguous();
  torch::serialize::InputArchive archive;
  load_checked_archive(archive, reinterpret_cast<const char*>(contiguous.data_ptr<uint8_t>()),
                       static_cast<size_t>(contiguous.numel()), device);
  optimizer.state().clear();
  optimizer.load(archive);
}

}  // namespace concord::core
