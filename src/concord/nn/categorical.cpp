#include "concord/nn/categorical.h"

#include <limits>
#include <sstream>
#include <stdexcept>

#include <ATen/TensorOperators.h>
#include <torch/csrc/autograd/custom_function.h>

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

namespace {

struct LogProbAndEntropyFunction : public torch::autograd::Function<LogProbAndEntropyFunction> {
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, const at::Tensor& logits,
                                                const at::Tensor& actions) {
    const at::Tensor log_probs = logits.log_softmax(-1);
    const at::Tensor probs = log_probs.exp();
    const at::Tensor index = actions.to(log_probs.device(), at::kLong).unsqueeze(-1);
    const at::Tensor log_prob = log_probs.gather(-1, index).squeeze(-1);
    // As entropy(): log 0 = -inf becomes the lowest finite value, so that 0 * log 0 = 0.
    const at::Tensor finite_log_probs = log_probs.clamp_min(lowest_finite(log_probs));
    const at::Tensor entropy = (probs * finite_log_probs).sum(-1).neg_();
    ctx->save_for_backward({log_probs, probs, finite_log_probs, index, entropy});
    return {log_prob, entropy};
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &log_probs = saved[0], &probs = saved[1], &finite_log_probs = saved[2], &index = saved[3];
    // d entropy / d log_softmax_k = -p_k (log p_k + [log p_k is finite]): through p = exp(log p)
    // and through the clamp, which passes the gradient where it did not clamp.
    at::Tensor d_log_probs;
    if (grads[1].defined()) {
      const at::Tensor passed = log_probs.ge(lowest_finite(log_probs)).to(log_probs.scalar_type());
      d_log_probs = (finite_log_probs + passed).mul_(probs).mul_(grads[1].neg().unsqueeze(-1));
    } else {
      d_log_probs = at::zeros_like(log_probs);
    }
    // d log_prob / d log_softmax: 1 at the action.
    if (grads[0].defined()) d_log_probs.scatter_add_(-1, index, grads[0].unsqueeze(-1));
    return {at::_log_softmax_backward_data(d_log_probs, log_probs, -1, log_probs.scalar_type()), at::Tensor()};
  }
};

}  // namespace

LogProbAndEntropy categorical_log_prob_and_entropy(const at::Tensor& logits, const at::Tensor& actions) {
  if (!logits.defined() || logits.dim() != 2 || logits.size(-1) < 1 || !actions.defined() || actions.dim() != 1 ||
      actions.size(0) != logits.size(0)) {
    std::ostringstream message;
    message << "categorical_log_prob_and_entropy: need logits [B, n] and actions [B], got ";
    if (logits.defined()) {
      message << logits.sizes();
    } else {
      message << "undefined logits";
    }
    message << " and ";
    if (actions.defined()) {
      message << actions.sizes();
    } else {
      message << "undefined actions";
    }
    throw std::invalid_argument(message.str());
  }
  const auto out = LogProbAndEntropyFunction::apply(logits, actions);
  return {out[0], out[1]};
}

}  // namespace concord::nn
