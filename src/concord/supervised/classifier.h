#pragma once

#include <string>
#include <vector>

#include <torch/nn/modules/container/sequential.h>

namespace concord::supervised {

// The image classifiers `concord fit` trains on 28x28 greyscale digits ([B, 1, 28, 28] -> logits
// [B, 10]), after the models of McMahan et al.'s federated-averaging experiments:
//
//   mlp  "2NN": flatten 784 -> Linear 200 -> ReLU -> Linear 200 -> ReLU -> Linear 10  (199,210 parameters)
//   cnn  conv 5x5 16 (pad 2) -> ReLU -> max-pool 2 -> conv 5x5 32 (pad 2) -> ReLU -> max-pool 2
//        -> flatten 1568 -> Linear 128 -> ReLU -> Linear 10                            (215,370 parameters)
//
//   fedavg_cnn  the paper's CNN at full size: conv 5x5 32 -> ReLU -> max-pool 2 -> conv 5x5 64
//        -> ReLU -> max-pool 2 -> flatten 3136 -> Linear 512 -> ReLU -> Linear 10  (1,663,370 parameters)
//   resnet20  He et al.'s CIFAR ResNet-20 with batch norm (residual_network.h)       (272,474 parameters)
//
// `cnn` is the paper's CNN narrowed to 16/32 channels and 128 hidden units, so that it trains in
// seconds on a CPU. LibTorch's default initialisation (resnet20: He's), from its global
// generator: seed it (torch::manual_seed) before building, on one thread.
torch::nn::Sequential make_classifier(const std::string& name);

// "mlp", "cnn", "fedavg_cnn", "resnet20".
std::vector<std::string> classifier_names();

}  // namespace concord::supervised
