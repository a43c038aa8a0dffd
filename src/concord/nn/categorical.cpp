#include "concord/nn/categorical.h"

#include <limits>
#include <sstream>
#include <stdexcept>

#include <ATen/TensorOperators.h>

#include "concord/core/torch_thread.h"

namespace concord::nn {
namespace {

// The most negative finite value of the tensor's dtype, so that log 0 = -inf can be replaced by
// a finite number: p * log p is then 0 * finite = 0 with a finite gradient, rather than NaN.
double lowest_finite(const at::Tensor& t) {
  return t.scalar_type() == at::kDouble ? std::numeric_limits<double>::lowest()
                                        : static_cast<double>(std::numeric_limits<float>::lowest());
}

}  // namespace

Categorical::Categorical(const at::Tensor& logits) {
  if (!logits.defined() || logits.dim() < 1 || logits.size(-1) < 1) {
    std::ostringstream message;
    message << "Categorical: logits must be [B, n] with n >= 1, got ";
    if (logits.defined()) {
      message << logits.sizes();
    } else {
      message << "an undefined tensor";
    }
    throw std::invalid_argument(message.str());
  }
  log_probs_ = logits.log_softmax(-1);
  probs_ = log_probs_.exp();
}

at::Tensor Categorical::sample() const {
  const at::Tensor flat = probs_.detach().reshape({-1, num_categories()});
  const at::Tensor draws =
      flat.multinomial(/*num_samples=*/1, /*replacement=*/true, core::thread_generator(flat.device()));
  return draws.reshape(probs_.sizes().slice(0, probs_.dim() - 1));
}

at::Tensor Categorical::log_prob(const at::Tensor& actions) const {
  const at::Tensor index = actions.to(log_probs_.device(), at::kLong).unsqueeze(-1);
  return log_probs_.gather(-1, index).squeeze(-1);
}

at::Tensor Categorical::entropy() const {
  const at::Tensor finite_log_probs = log_probs_.clamp_min(lowest_finite(log_probs_));
  return -(probs_ * finite_log_probs).sum(-1);
}

at::Tensor Categorical::mode() const { return probs_.argmax(-1); }

}  // namespace concord::nn
