#include "concord/explore/code_autoencoder.h"

#include <algorithm>

#include <torch/torch.h>

namespace concord::explore {

CodeAutoencoderImpl::CodeAutoencoderImpl(int64_t input_dim, int64_t code_size, std::vector<int64_t> hidden_sizes,
                                         double noise)
    : noise_(noise) {
  encoder_torso_ = register_module("encoder_torso", nn::MlpTorso(input_dim, hidden_sizes, "relu"));
  encoder_head_ = register_module("encoder_head", torch::nn::Linear(encoder_torso_->output_dim(), code_size));
  std::vector<int64_t> mirrored(hidden_sizes.rbegin(), hidden_sizes.rend());
  decoder_torso_ = register_module("decoder_torso", nn::MlpTorso(code_size, mirrored, "relu"));
  decoder_head_ = register_module("decoder_head", torch::nn::Linear(decoder_torso_->output_dim(), input_dim));
}

torch::Tensor CodeAutoencoderImpl::code_logits(const torch::Tensor& x) {
  return encoder_head_->forward(encoder_torso_->forward(x));
}

CodeAutoencoderImpl::Output CodeAutoencoderImpl::forward(const torch::Tensor& x, bool noisy) {
  torch::Tensor logits = code_logits(x);
  if (noisy) logits = logits + (torch::rand_like(logits) * 2.0 - 1.0) * noise_;
  torch::Tensor code = torch::sigmoid(logits);
  return Output{code, decoder_head_->forward(decoder_torso_->forward(code))};
}

torch::Tensor CodeAutoencoderImpl::binary_code(const torch::Tensor& x) {
  return torch::sigmoid(code_logits(x)).round();
}

}  // namespace concord::explore
