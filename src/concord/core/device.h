#pragma once

#include <string>

#include <c10/core/Device.h>

namespace concord::core {

// The one place that decides where tensors live. `name` is "cpu", "cuda", "cuda:N" or "auto"
// (CUDA when this LibTorch build has it and a GPU is present, else the CPU). Asking for CUDA
// where there is none throws std::invalid_argument saying so.
c10::Device resolve_device(const std::string& name);

}  // namespace concord::core
