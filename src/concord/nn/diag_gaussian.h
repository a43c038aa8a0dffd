#pragma once

#include <ATen/core/Tensor.h>

namespace concord::nn {

// A batch of Gaussians with diagonal covariance over R^d: mean [B, d] and log standard deviation
// either state-independent [d] (broadcast over the batch) or per row [B, d]. Any leading batch
// dimensions [..., d] work the same way. Results live on the mean's device and, except sample()
// and mode(), are differentiable with respect to mean and log_std.
//
// Samples are unbounded: a policy built on this emits unclipped actions, and clipping to a Box's
// bounds belongs at the environment boundary (so log_prob stays that of the sampled action).
//
// (at::Tensor is the type torch::Tensor names; this header includes only ATen's Tensor to keep
// compile times down.)
class DiagGaussian {
 public:
  // Throws std::invalid_argument, printing both shapes, unless mean has at least one dimension
  // and log_std is [d] or has mean's shape.
  DiagGaussian(const at::Tensor& mean, const at::Tensor& log_std);

  // mean + std * eps with eps ~ N(0, I) from LibTorch's global generator: [B, d], detached.
  at::Tensor sample() const;
  // The same draw, differentiable with respect to mean and log_std (reparameterisation).
  at::Tensor rsample() const;
  // sum_j [-0.5 ((x_j - mu_j) / sigma_j)^2 - log sigma_j - 0.5 log(2 pi)]: x [B, d] -> [B].
  at::Tensor log_prob(const at::Tensor& x) const;
  // sum_j [0.5 + 0.5 log(2 pi) + log sigma_j]: [B].
  at::Tensor entropy() const;
  // The mean: [B, d].
  const at::Tensor& mode() const { return mean_; }

  const at::Tensor& mean() const { return mean_; }
  // log_std expanded to the mean's shape: [B, d].
  const at::Tensor& log_std() const { return log_std_; }
  int64_t dim() const { return mean_.size(-1); }

 private:
  at::Tensor mean_;
  at::Tensor log_std_;
  at::Tensor std_;
};

}  // namespace concord::nn
