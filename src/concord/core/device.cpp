#include "concord/core/device.h"

#include <stdexcept>
#include <string>

#include <torch/cuda.h>

namespace concord::core {

c10::Device resolve_device(const std::string& name, int local_rank) {
  const auto rank_gpu = [&] {
    const int gpus = static_cast<int>(torch::cuda::device_count());
    return c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(local_rank % gpus));
  };
  if (name == "auto") return torch::cuda::is_available() ? rank_gpu() : c10::Device(c10::kCPU);
  c10::Device device(c10::kCPU);
  try {
    device = c10::Device(name);
  } catch (const std::exception&) {
    throw std::invalid_argument("unknown device '" + name + "' (expected cpu, cuda, cuda:N or auto)");
  }
  if (device.is_cuda() && !torch::cuda::is_available()) {
    throw std::invalid_argument("device '" + name + "' requested, but this LibTorch build has no usable CUDA device");
  }
  if (!device.is_cpu() && !device.is_cuda()) {
    throw std::invalid_argument("device '" + name + "' is not supported (expected cpu, cuda, cuda:N or auto)");
  }
  if (device.is_cuda() && !device.has_index()) return rank_gpu();
  if (device.is_cuda() && device.index() >= static_cast<int>(torch::cuda::device_count())) {
    throw std::invalid_argument("device '" + name + "' requested, but this machine has " +
                                std::to_string(torch::cuda::device_count()) + " CUDA device(s)");
  }
  return device;
}

}  // namespace concord::core
