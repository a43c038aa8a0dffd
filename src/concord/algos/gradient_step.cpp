#include "concord/algos/gradient_step.h"

#include <torch/nn/utils/clip_grad.h>

namespace concord::algos {

void gradient_step(const torch::Tensor& loss, nn::FlatParameters& parameters, torch::optim::Optimizer& optimizer,
                   double max_grad_norm, sync::SyncStrategy& sync) {
  parameters.zero_grad();
  loss.backward();
  sync.synchronize_gradients();
  torch::nn::utils::clip_grad_norm_(parameters.values(), max_grad_norm);
  optimizer.step();
  sync.after_step();
}

}  // namespace concord::algos
