#include "concord/nn/flat_parameters.h"

#include <stdexcept>

#include <c10/core/GradMode.h>

namespace concord::nn {

FlatParameters::FlatParameters(torch::nn::Module& module) {
  std::vector<torch::Tensor> parameters = module.parameters();
  if (parameters.empty()) throw std::invalid_argument("FlatParameters: the module has no parameters");
  const torch::TensorOptions options = parameters.front().options();
  int64_t total = 0;
  for (const torch::Tensor& parameter : parameters) {
    if (parameter.device() != options.device() || parameter.scalar_type() != options.dtype().toScalarType()) {
      throw std::invalid_argument("FlatParameters: parameters differ in device or dtype");
    }
    total += parameter.numel();
  }

  c10::NoGradGuard no_grad;
  values_ = torch::empty({total}, options.requires_grad(false));
  gradient_ = torch::zeros({total}, options.requires_grad(false));
  int64_t offset = 0;
  for (torch::Tensor& parameter : parameters) {
    const int64_t count = parameter.numel();
    torch::Tensor value_slice = values_.narrow(0, offset, count).view(parameter.sizes());
    value_slice.copy_(parameter);
    parameter.set_data(value_slice);
    parameter.mutable_grad() = gradient_.narrow(0, offset, count).view(parameter.sizes());
    offset += count;
  }
  values_.set_requires_grad(true);
  values_.mutable_grad() = gradient_;
}

}  // namespace concord::nn
