#pragma once

#include <torch/nn/modules/container/sequential.h>
#include <torch/types.h>

namespace concord::supervised {

// The fast gradient sign method (Goodfellow et al. 2015), ABSA's adversarial examples:
//   x_adv = clamp(x + epsilon * sign(d cross_entropy(model(x), y) / dx), 0, 1)
// The images stay in the data's [0, 1]. Only the input's gradient is taken: the parameters'
// gradients (and any hooks a sync strategy keeps on them) are left alone.
torch::Tensor fgsm_examples(torch::nn::Sequential& model, const torch::Tensor& images, const torch::Tensor& labels,
                            double epsilon);

}  // namespace concord::supervised
