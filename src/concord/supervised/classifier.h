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
// The CNN is the paper's with 16/32 channels and 128 hidden units instead of 32/64 and 512, so
// that it trains in seconds on a CPU. LibTorch's default initialisation, from its global
// generator: seed it (torch::manual_seed) before building, on one thread.
torch::nn::Sequential make_classifier(const std::string& name);

// "mlp", "cnn".
std::vector<std::string> classifier_names();

}  // namespace concord::supervised
