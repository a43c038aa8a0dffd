#pragma once

#include <cstdint>
#include <string>

#include <torch/nn/modules/container/sequential.h>

namespace concord::supervised {

// The generator and discriminator of a GAN on 28x28 greyscale digits:
//
//   generator      noise [B, latent] -> images [B, 1, 28, 28] in (0, 1) (a sigmoid: MNIST's range)
//   discriminator  images [B, 1, 28, 28] -> logits [B, 1] (real > 0 > generated)
//
//   mlp   G: latent -> h -> ReLU -> h -> ReLU -> 784 -> sigmoid
//         D: 784 -> h -> LeakyReLU(0.2) -> h -> LeakyReLU(0.2) -> 1                 (h = hidden_units)
//   conv  G: latent -> 32x7x7 -> ReLU -> deconv 4x4/2 16 -> ReLU -> deconv 4x4/2 1 -> sigmoid
//         D: conv 4x4/2 16 -> LeakyReLU(0.2) -> conv 4x4/2 32 -> LeakyReLU(0.2) -> 1568 -> 1
//
// The conv pair is DCGAN's shape narrowed to two layers and 16/32 channels so that it trains on a
// CPU. LibTorch's default initialisation, from its global generator: seed it (torch::manual_seed)
// before building, on one thread. Throws std::invalid_argument for another model name.
torch::nn::Sequential make_generator(const std::string& model, int64_t latent_size, int64_t hidden_units);
torch::nn::Sequential make_discriminator(const std::string& model, int64_t hidden_units);

}  // namespace concord::supervised
