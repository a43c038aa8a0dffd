#pragma once

#include <cstdint>
#include <vector>

#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include "concord/nn/mlp.h"

namespace concord::explore {

// The autoencoder of AE-SimHash (Tang et al., 2017, section 2.3): an encoder down to a layer of
// D sigmoid units b(s), and a decoder reconstructing the input from it. While training, uniform
// noise U(-a, a) is added to the pre-sigmoid activations: to carry information through the noise
// the units must saturate, which drives b(s) towards binary values, so that the rounded code is
// a stable hash of the state.
//
//   x [B, input_dim] -> encoder MLP (relu) -> Linear -> (+ U(-a, a) when noisy) -> sigmoid = b [B, D]
//   b -> decoder MLP (relu) -> Linear -> reconstruction [B, input_dim]
class CodeAutoencoderImpl : public torch::nn::Module {
 public:
  CodeAutoencoderImpl(int64_t input_dim, int64_t code_size, std::vector<int64_t> hidden_sizes, double noise);

  struct Output {
    torch::Tensor code;            // b, [B, D] in (0, 1)
    torch::Tensor reconstruction;  // [B, input_dim]
  };
  Output forward(const torch::Tensor& x, bool noisy);
  // round(b) without noise: [B, D] float in {0, 1}.
  torch::Tensor binary_code(const torch::Tensor& x);

 private:
  torch::Tensor code_logits(const torch::Tensor& x);

  double noise_;
  nn::MlpTorso encoder_torso_{nullptr};
  torch::nn::Linear encoder_head_{nullptr};
  nn::MlpTorso decoder_torso_{nullptr};
  torch::nn::Linear decoder_head_{nullptr};
};
TORCH_MODULE(CodeAutoencoder);

}  // namespace concord::explore
