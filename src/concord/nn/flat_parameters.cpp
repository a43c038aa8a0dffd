#include "concord/nn/flat_parameters.h"

#include <stdexcept>

#include <c10/core/GradMode.h>

namespace concord::nn {

namespace {

int64_t checked_total(const std::vector<torch::Tensor>& parameters) {
  if (parameters.empty()) throw std::invalid_argument("FlatParameters: the module has no parameters");
  const torch::TensorOptions options = parameters.front().options();
  int64_t total = 0;
  for (const torch::Tensor& parameter : parameters) {
    if (parameter.device() != options.device() || parameter.scalar_type() != options.dtype().toScalarType()) {
      throw std::invalid_argument("FlatParameters: parameters differ in device or dtype");
    }
    total += parameter.numel();
  }
  return total;
}

}  // namespace

FlatParameters::FlatParameters(torch::nn::Module& module) {
  const std::vector<torch::Tensor> parameters = module.parameters();
  const int64_t total = checked_total(parameters);
  c10::NoGradGuard no_grad;
  torch::Tensor storage = torch::empty({total}, parameters.front().options().requires_grad(false));
  int64_t offset = 0;
  for (const torch::Tensor& parameter : parameters) {
    storage.narrow(0, offset, parameter.numel()).view(parameter.sizes()).copy_(parameter);
    offset += parameter.numel();
  }
  bind(module, storage);
}

FlatParameters::FlatParameters(torch::nn::Module& module, const FlatParameters& shared) {
  const std::vector<torch::Tensor> parameters = module.parameters();
  const int64_t total = checked_total(parameters);
  if (!shared.values_.defined() || shared.values_.numel() != total ||
      shared.values_.device() != parameters.front().device() ||
      shared.values_.scalar_type() != parameters.front().scalar_type()) {
    throw std::invalid_argument("FlatParameters: the shared buffer does not match the module's parameters");
  }
  bind(module, shared.values_.detach());
}

void FlatParameters::bind(torch::nn::Module& module, const torch::Tensor& storage) {
  c10::NoGradGuard no_grad;
  values_ = storage;
  gradient_ = torch::zeros_like(storage);
  int64_t offset = 0;
  for (torch::Tensor& parameter : module.parameters()) {
    const int64_t count = parameter.numel();
    parameter.set_data(values_.narrow(0, offset, count).view(parameter.sizes()));
    parameter.mutable_grad() = gradient_.narrow(0, offset, count).view(parameter.sizes());
    parameters_.push_back(parameter);
    offsets_.push_back(offset);
    offset += count;
  }
  values_.set_requires_grad(true);
  values_.mutable_grad() = gradient_;
}

}  // namespace concord::nn
