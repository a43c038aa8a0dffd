#include "concord/nn/diag_gaussian.h"

#include <sstream>
#include <stdexcept>

#include <ATen/TensorOperators.h>
#include <ATen/ops/randn.h>

#include "concord/core/torch_thread.h"

namespace concord::nn {
namespace {

// 0.5 * log(2 pi).
constexpr double kHalfLog2Pi = 0.91893853320467274178;

// N(0, 1) noise shaped like `like`, from the calling thread's generator.
at::Tensor standard_normal(const at::Tensor& like) {
  return at::randn(like.sizes(), core::thread_generator(like.device()), like.options());
}

}  // namespace

DiagGaussian::DiagGaussian(const at::Tensor& mean, const at::Tensor& log_std) {
  const bool valid = mean.defined() && log_std.defined() && mean.dim() >= 1 &&
                     ((log_std.dim() == 1 && log_std.size(0) == mean.size(-1)) || log_std.sizes() == mean.sizes());
  if (!valid) {
    std::ostringstream message;
    message << "DiagGaussian: expected mean [B, d] and log_std [d] or [B, d], got mean ";
    if (mean.defined()) {
      message << mean.sizes();
    } else {
      message << "undefined";
    }
    message << " and log_std ";
    if (log_std.defined()) {
      message << log_std.sizes();
    } else {
      message << "undefined";
    }
    throw std::invalid_argument(message.str());
  }
  mean_ = mean;
  log_std_ = log_std.expand_as(mean);
  std_ = log_std_.exp();
}

at::Tensor DiagGaussian::sample() const {
  const at::Tensor mean = mean_.detach();
  return mean + std_.detach() * standard_normal(mean);
}

at::Tensor DiagGaussian::rsample() const { return mean_ + std_ * standard_normal(mean_); }

at::Tensor DiagGaussian::log_prob(const at::Tensor& x) const {
  const at::Tensor z = (x.to(mean_.device(), mean_.scalar_type()) - mean_) / std_;
  return (-0.5 * z.square() - log_std_ - kHalfLog2Pi).sum(-1);
}

at::Tensor DiagGaussian::entropy() const { return (log_std_ + (0.5 + kHalfLog2Pi)).sum(-1); }

}  // namespace concord::nn
