#include "concord/supervised/hessian.h"

#include <cmath>
#include <stdexcept>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

namespace concord::supervised {
namespace {

// The gradient of loss() with its graph kept, so that products with it can be differentiated
// again; parameters the loss does not reach get zeros.
std::vector<torch::Tensor> differentiable_gradient(const LossClosure& loss,
                                                   const std::vector<torch::Tensor>& parameters) {
  if (parameters.empty()) throw std::invalid_argument("Hessian products need at least one parameter");
  const torch::Tensor value = loss();
  if (value.numel() != 1) throw std::invalid_argument("Hessian products need a scalar loss");
  std::vector<torch::Tensor> gradient = torch::autograd::grad({value}, parameters, /*grad_outputs=*/{},
                                                              /*retain_graph=*/true, /*create_graph=*/true,
                                                              /*allow_unused=*/true);
  for (size_t i = 0; i < gradient.size(); ++i) {
    if (!gradient[i].defined()) gradient[i] = torch::zeros_like(parameters[i]);
  }
  return gradient;
}

int64_t total_numel(const std::vector<torch::Tensor>& parameters) {
  int64_t total = 0;
  for (const torch::Tensor& parameter : parameters) total += parameter.numel();
  return total;
}

// d(g . v)/d(parameters) = H v, flat.
torch::Tensor product_with(const std::vector<torch::Tensor>& gradient, const std::vector<torch::Tensor>& parameters,
                           const torch::Tensor& vector) {
  torch::Tensor dot = torch::zeros({}, vector.options());
  int64_t offset = 0;
  for (size_t i = 0; i < parameters.size(); ++i) {
    const int64_t count = parameters[i].numel();
    dot = dot + (gradient[i] * vector.narrow(0, offset, count).view(parameters[i].sizes())).sum();
    offset += count;
  }
  if (!dot.requires_grad()) return torch::zeros_like(vector);  // the loss is linear in the parameters
  std::vector<torch::Tensor> product = torch::autograd::grad({dot}, parameters, {}, /*retain_graph=*/true,
                                                             /*create_graph=*/false, /*allow_unused=*/true);
  std::vector<torch::Tensor> flat;
  for (size_t i = 0; i < product.size(); ++i) {
    flat.push_back(product[i].defined() ? product[i].reshape({-1})
                                        : torch::zeros({parameters[i].numel()}, vector.options()));
  }
  return torch::cat(flat).detach();
}

}  // namespace

torch::Tensor hessian_vector_product(const LossClosure& loss, const std::vector<torch::Tensor>& parameters,
                                     const torch::Tensor& vector) {
  if (vector.dim() != 1 || vector.numel() != total_numel(parameters)) {
    throw std::invalid_argument("hessian_vector_product: the vector has " + std::to_string(vector.numel()) +
                                " entries, the parameters " + std::to_string(total_numel(parameters)));
  }
  return product_with(differentiable_gradient(loss, parameters), parameters, vector);
}

EigenvalueEstimate top_hessian_eigenvalue(const LossClosure& loss, const std::vector<torch::Tensor>& parameters,
                                          const PowerIterationOptions& options) {
  if (options.max_iterations < 1 || !(options.tolerance >= 0.0)) {
    throw std::invalid_argument("power iteration needs max_iterations >= 1 and tolerance >= 0");
  }
  const std::vector<torch::Tensor> gradient = differentiable_gradient(loss, parameters);
  // The starting vector from its own generator: the global one belongs to the caller.
  const at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(options.seed);
  torch::Tensor vector = torch::randn({total_numel(parameters)}, generator,
                                      parameters.front().options().requires_grad(false).device(torch::kCPU))
                             .to(parameters.front().device());
  vector /= vector.norm();

  EigenvalueEstimate estimate;
  for (int iteration = 1; iteration <= options.max_iterations; ++iteration) {
    const torch::Tensor product = product_with(gradient, parameters, vector);
    const double value = product.dot(vector).item<double>();
    const double norm = product.norm().item<double>();
    const bool settled = iteration > 1 && std::abs(value - estimate.value) <= options.tolerance * std::abs(value);
    estimate.value = value;
    estimate.iterations = iteration;
    if (settled || norm == 0.0) {
      estimate.converged = true;
      break;
    }
    vector = product / norm;
  }
  return estimate;
}

}  // namespace concord::supervised
