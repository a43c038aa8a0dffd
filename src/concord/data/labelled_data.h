#pragma once

#include <cstdint>

#include <torch/types.h>

namespace concord::data {

// A supervised data set held in memory: images [N, C, H, W] float32 in [0, 1] and labels [N]
// int64, row i of one belonging to row i of the other. Cheap to copy (tensors share storage).
struct LabelledData {
  torch::Tensor images;
  torch::Tensor labels;

  int64_t size() const { return labels.defined() ? labels.size(0) : 0; }
  // The rows named by `indices` (int64 [M]), in that order.
  LabelledData select(const torch::Tensor& indices) const {
    return {images.index_select(0, indices), labels.index_select(0, indices)};
  }
};

// A data set's fixed training and test parts.
struct TrainTestSplit {
  LabelledData train;
  LabelledData test;
};

}  // namespace concord::data
