#include "concord/supervised/fgsm.h"

#include <torch/torch.h>

namespace concord::supervised {

torch::Tensor fgsm_examples(torch::nn::Sequential& model, const torch::Tensor& images, const torch::Tensor& labels,
                            double epsilon) {
  const torch::Tensor input = images.detach().clone().requires_grad_(true);
  const torch::Tensor loss = torch::nn::functional::cross_entropy(model->forward(input), labels);
  const torch::Tensor gradient = torch::autograd::grad({loss}, {input})[0];
  torch::NoGradGuard no_grad;
  return (input.detach() + epsilon * gradient.sign()).clamp(0.0, 1.0);
}

}  // namespace concord::supervised
