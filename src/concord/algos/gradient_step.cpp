#include "concord/algos/gradient_step.h"

#include <ATen/ops/clamp.h>

#include <cmath>

#include "concord/algos/fused_adam.h"

namespace concord::algos {

void clip_gradient_norm(const torch::Tensor& gradient, double max_norm) {
  if (gradient.device().is_cpu() && gradient.scalar_type() == at::kFloat && gradient.is_contiguous()) {
    // On the CPU, two passes over the buffer and no LibTorch operation: the norm's squares summed
    // in double (LibTorch sums them in float32, in another order), the rest as LibTorch rounds it.
    float* g = gradient.data_ptr<float>();
    const int64_t n = gradient.numel();
    double squares = 0.0;
    for (int64_t i = 0; i < n; ++i) squares += static_cast<double>(g[i]) * g[i];
    const float norm = static_cast<float>(std::sqrt(squares));
    const float coefficient = std::fmin(static_cast<float>(max_norm) / (norm + 1e-6F), 1.0F);
    if (coefficient < 1.0F) {
      for (int64_t i = 0; i < n; ++i) g[i] *= coefficient;
    }
    return;
  }
  const torch::Tensor coefficient = at::clamp(max_norm / (gradient.norm() + 1e-6), c10::nullopt, 1.0);
  gradient.mul_(coefficient);
}

void gradient_step(const torch::Tensor& loss, nn::FlatParameters& parameters, torch::optim::Optimizer& optimizer,
                   double max_grad_norm, sync::SyncStrategy& sync, std::mutex* step_lock) {
  parameters.zero_grad();
  loss.backward();
  sync.synchronize_gradients();
  if (std::isfinite(max_grad_norm)) clip_gradient_norm(parameters.gradient(), max_grad_norm);
  {
    std::unique_lock<std::mutex> stepping;
    if (step_lock != nullptr) stepping = std::unique_lock<std::mutex>(*step_lock);
    if (!fused_adam_step(optimizer)) optimizer.step();
  }
  sync.after_step();
}

}  // namespace concord::algos
