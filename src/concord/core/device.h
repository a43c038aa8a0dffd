#pragma once

#include <string>

#include <c10/core/Device.h>

namespace concord::core {

// The one place that decides where tensors live. `name` is "cpu", "cuda", "cuda:N" or "auto"
// (CUDA when this LibTorch build has it and a GPU is present, else the CPU). "cuda" and "auto"
// pick GPU `local_rank` modulo the GPUs present, so that the processes a launcher starts on one
// machine (LOCAL_RANK) spread over its GPUs as torchrun's convention has it. Asking for CUDA
// where there is none, or for a GPU index the machine lacks, throws std::invalid_argument saying
// so.
c10::Device resolve_device(const std::string& name, int local_rank = 0);

}  // namespace concord::core
