#include "concord/supervised/classifier.h"

#include <stdexcept>

#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/pooling.h>

namespace concord::supervised {

torch::nn::Sequential make_classifier(const std::string& name) {
  namespace tnn = torch::nn;
  if (name == "mlp") {
    return tnn::Sequential(tnn::Flatten(), tnn::Linear(784, 200), tnn::ReLU(), tnn::Linear(200, 200), tnn::ReLU(),
                           tnn::Linear(200, 10));
  }
  if (name == "cnn") {
    return tnn::Sequential(tnn::Conv2d(tnn::Conv2dOptions(1, 16, 5).padding(2)), tnn::ReLU(), tnn::MaxPool2d(2),
                           tnn::Conv2d(tnn::Conv2dOptions(16, 32, 5).padding(2)), tnn::ReLU(), tnn::MaxPool2d(2),
                           tnn::Flatten(), tnn::Linear(32 * 7 * 7, 128), tnn::ReLU(), tnn::Linear(128, 10));
  }
  throw std::invalid_argument("unknown model '" + name + "' (known: mlp, cnn)");
}

std::vector<std::string> classifier_names() { return {"mlp", "cnn"}; }

}  // namespace concord::supervised
