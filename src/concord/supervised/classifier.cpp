#include "concord/supervised/classifier.h"

#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/pooling.h>

#include "concord/core/registry.h"
#include "concord/supervised/residual_network.h"

namespace concord::supervised {

namespace {

using ClassifierFactory = torch::nn::Sequential (*)();

torch::nn::Sequential make_mlp() {
  namespace tnn = torch::nn;
  return tnn::Sequential(tnn::Flatten(), tnn::Linear(784, 200), tnn::ReLU(), tnn::Linear(200, 200), tnn::ReLU(),
                         tnn::Linear(200, 10));
}

torch::nn::Sequential make_cnn() {
  namespace tnn = torch::nn;
  return tnn::Sequential(tnn::Conv2d(tnn::Conv2dOptions(1, 16, 5).padding(2)), tnn::ReLU(), tnn::MaxPool2d(2),
                         tnn::Conv2d(tnn::Conv2dOptions(16, 32, 5).padding(2)), tnn::ReLU(), tnn::MaxPool2d(2),
                         tnn::Flatten(), tnn::Linear(32 * 7 * 7, 128), tnn::ReLU(), tnn::Linear(128, 10));
}

torch::nn::Sequential make_fedavg_cnn() {
  namespace tnn = torch::nn;
  return tnn::Sequential(tnn::Conv2d(tnn::Conv2dOptions(1, 32, 5).padding(2)), tnn::ReLU(), tnn::MaxPool2d(2),
                         tnn::Conv2d(tnn::Conv2dOptions(32, 64, 5).padding(2)), tnn::ReLU(), tnn::MaxPool2d(2),
                         tnn::Flatten(), tnn::Linear(64 * 7 * 7, 512), tnn::ReLU(), tnn::Linear(512, 10));
}

torch::nn::Sequential make_resnet20() { return make_residual_network(3); }

const core::Registry<ClassifierFactory>& classifiers() {
  static const core::Registry<ClassifierFactory> registry(
      "model", {{"mlp", make_mlp}, {"cnn", make_cnn}, {"fedavg_cnn", make_fedavg_cnn}, {"resnet20", make_resnet20}});
  return registry;
}

}  // namespace

torch::nn::Sequential make_classifier(const std::string& name) { return classifiers().at(name)(); }

std::vector<std::string> classifier_names() { return classifiers().names(); }

}  // namespace concord::supervised
