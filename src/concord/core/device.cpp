#include "concord/core/device.h"

#include <stdexcept>

#include <torch/cuda.h>

namespace concord::core {

c10::Device resolve_device(const std::string& name) {
  if (name == "auto") return torch::cuda::is_available() ? c10::Device(c10::kCUDA, 0) : c10::Device(c10::kCPU);
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
  return device;
}

}  // namespace concord::core
