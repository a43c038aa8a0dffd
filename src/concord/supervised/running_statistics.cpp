#include "concord/supervised/running_statistics.h"

#include <stdexcept>
#include <string>
#include <vector>

#include <torch/torch.h>

namespace concord::supervised {
namespace {

std::vector<torch::Tensor> floating_buffers(torch::nn::Module& model) {
  std::vector<torch::Tensor> buffers;
  for (const torch::Tensor& buffer : model.buffers()) {
    if (buffer.is_floating_point()) buffers.push_back(buffer);
  }
  return buffers;
}

}  // namespace

torch::Tensor running_statistics(torch::nn::Module& model) {
  std::vector<torch::Tensor> flat;
  for (const torch::Tensor& buffer : floating_buffers(model))
    flat.push_back(buffer.detach().reshape({-1}).to(torch::kFloat32));
  return flat.empty() ? torch::empty({0}) : torch::cat(flat);
}

void load_running_statistics(torch::nn::Module& model, const torch::Tensor& flat) {
  const std::vector<torch::Tensor> buffers = floating_buffers(model);
  int64_t total = 0;
  for (const torch::Tensor& buffer : buffers) total += buffer.numel();
  if (flat.numel() != total) {
    throw std::invalid_argument("running statistics of " + std::to_string(flat.numel()) + " values for a model with " +
                                std::to_string(total));
  }
  torch::NoGradGuard no_grad;
  int64_t offset = 0;
  for (const torch::Tensor& buffer : buffers) {
    buffer.copy_(flat.narrow(0, offset, buffer.numel()).view_as(buffer));
    offset += buffer.numel();
  }
}

void average_running_statistics(torch::nn::Module& model, comm::Communicator& communicator) {
  torch::Tensor flat = running_statistics(model);
  if (flat.numel() == 0 || communicator.world_size() == 1) return;
  communicator.allreduce_mean(flat);
  load_running_statistics(model, flat);
}

}  // namespace concord::supervised
