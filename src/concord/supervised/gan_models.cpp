#include "concord/supervised/gan_models.h"

#include <stdexcept>

#include <torch/torch.h>

namespace concord::supervised {
namespace {

namespace tnn = torch::nn;

constexpr int64_t kPixels = 28 * 28;

tnn::LeakyReLU leaky_relu() { return tnn::LeakyReLU(tnn::LeakyReLUOptions().negative_slope(0.2)); }

void check_model(const std::string& model) {
  if (model != "mlp" && model != "conv") throw std::invalid_argument("unknown GAN model '" + model + "': mlp or conv");
}

}  // namespace

torch::nn::Sequential make_generator(const std::string& model, int64_t latent_size, int64_t hidden_units) {
  check_model(model);
  if (model == "mlp") {
    return tnn::Sequential(tnn::Linear(latent_size, hidden_units), tnn::ReLU(), tnn::Linear(hidden_units, hidden_units),
                           tnn::ReLU(), tnn::Linear(hidden_units, kPixels), tnn::Sigmoid(),
                           tnn::Unflatten(tnn::UnflattenOptions(1, {1, 28, 28})));
  }
  return tnn::Sequential(
      tnn::Linear(latent_size, 32 * 7 * 7), tnn::ReLU(), tnn::Unflatten(tnn::UnflattenOptions(1, {32, 7, 7})),
      tnn::ConvTranspose2d(tnn::ConvTranspose2dOptions(32, 16, 4).stride(2).padding(1)), tnn::ReLU(),
      tnn::ConvTranspose2d(tnn::ConvTranspose2dOptions(16, 1, 4).stride(2).padding(1)), tnn::Sigmoid());
}

torch::nn::Sequential make_discriminator(const std::string& model, int64_t hidden_units) {
  check_model(model);
  if (model == "mlp") {
    return tnn::Sequential(tnn::Flatten(), tnn::Linear(kPixels, hidden_units), leaky_relu(),
                           tnn::Linear(hidden_units, hidden_units), leaky_relu(), tnn::Linear(hidden_units, 1));
  }
  return tnn::Sequential(tnn::Conv2d(tnn::Conv2dOptions(1, 16, 4).stride(2).padding(1)), leaky_relu(),
                         tnn::Conv2d(tnn::Conv2dOptions(16, 32, 4).stride(2).padding(1)), leaky_relu(), tnn::Flatten(),
                         tnn::Linear(32 * 7 * 7, 1));
}

}  // namespace concord::supervised
