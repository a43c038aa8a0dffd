#pragma once

#include <ATen/core/Tensor.h>

namespace concord::nn {

// A batch of categorical distributions over {0, ..., n-1}, parameterised by unnormalised logits
// [B, n] (any leading batch dimensions [..., n] work the same way). Stateless apart from the
// tensors it holds; every result lives on the logits' device and, except sample() and mode(),
// is differentiable with respect to the logits.
//
// (at::Tensor is the type torch::Tensor names; this header includes only ATen's Tensor to keep
// compile times down.)
class Categorical {
 public:
  // Throws std::invalid_argument, printing the shape, unless logits has at least one dimension
  // and a non-empty last dimension. Logits of -inf give probability 0.
  explicit Categorical(const at::Tensor& logits);

  // One draw per row from LibTorch's global generator for the logits' device:
  // int64 [B], values in [0, n). Not differentiable.
  at::Tensor sample() const;
  // log p(actions): int64 actions [B] -> [B]; equals log_softmax(logits) at the actions.
  at::Tensor log_prob(const at::Tensor& actions) const;
  // -sum_i p_i log p_i: [B]. Zero-probability categories contribute 0.
  at::Tensor entropy() const;
  // The most probable category, int64 [B] (the first one on ties).
  at::Tensor mode() const;

  // Normalised log-probabilities log_softmax(logits): [B, n].
  const at::Tensor& log_probs() const { return log_probs_; }
  // Probabilities softmax(logits): [B, n].
  const at::Tensor& probs() const { return probs_; }
  int64_t num_categories() const { return log_probs_.size(-1); }

 private:
  at::Tensor log_probs_;
  at::Tensor probs_;
};

// log p(actions) and the entropy of Categorical(logits), as one autograd node: what a
// policy-gradient loss needs of a batch, with the same values and (to rounding) the same
// gradients as Categorical(logits).log_prob(actions) and .entropy(). Why: on small networks a
// gradient step is bound by per-operation cost, and the composed form records nine autograd
// nodes for what is one log-softmax. The backward pass forms d/d log_softmax for both outputs and
// hands it to log-softmax's own backward; zero-probability categories contribute nothing, as in
// entropy(). logits [B, n], int64 actions [B]; either result may be left out of the loss.
struct LogProbAndEntropy {
  at::Tensor log_prob;  // [B]
  at::Tensor entropy;   // [B]
};
LogProbAndEntropy categorical_log_prob_and_entropy(const at::Tensor& logits, const at::Tensor& actions);

}  // namespace concord::nn
