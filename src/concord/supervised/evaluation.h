#pragma once

#include <cstdint>

#include <torch/nn/modules/container/sequential.h>

#include "concord/data/labelled_data.h"

namespace concord::supervised {

struct Evaluation {
  double loss = 0.0;      // mean cross-entropy
  double accuracy = 0.0;  // fraction of rows whose arg-max logit is the label
};

// The classifier's loss and accuracy on `data`, in batches of `batch_size` rows, without
// recording gradients.
Evaluation evaluate(torch::nn::Sequential& model, const data::LabelledData& data, int64_t batch_size = 1000);

}  // namespace concord::supervised
