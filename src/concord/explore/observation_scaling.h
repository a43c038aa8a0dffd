#pragma once

#include <cstdint>
#include <vector>

#include <torch/types.h>

#include "concord/envs/space.h"

namespace concord::explore {

// The preprocessing g of SimHash for low-dimensional states: each element with finite Box
// bounds is mapped linearly to [-1, 1] (unbounded elements pass unchanged), and, with
// `append_bias`, a constant 1 is appended.
//
// Why the bias: sign(A x) only depends on the direction of x, so k hyperplanes through the origin
// cut a 2-D state space (MountainCar) into 2k wedges and never tell a far state from a near one.
// With the constant element the hyperplanes are affine and the cells cover the space.
class ObservationScaling {
 public:
  ObservationScaling(const envs::Space& observation_space, bool append_bias);

  // [N, obs_dim] -> [N, output_dim()] float32.
  torch::Tensor operator()(const torch::Tensor& observations) const;
  int64_t output_dim() const { return output_dim_; }

 private:
  torch::Tensor offset_;  // [obs_dim]: x' = (x - offset) * scale
  torch::Tensor scale_;
  bool append_bias_;
  int64_t output_dim_;
};

}  // namespace concord::explore
