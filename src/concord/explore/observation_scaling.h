#pragma once

#include <cstdint>
#include <vector>

#include <torch/types.h>

#include "concord/envs/space.h"

namespace concord::explore {

// The preprocessing g of SimHash: each element with finite Box bounds is mapped linearly to
// [0, 1] (unbounded elements pass unchanged), and, with `append_bias`, a constant 1 is appended.
//
// Why [0, 1] and not [-1, 1]: centring adds the same large vector to every high-dimensional
// sparse state. A one-hot DeepSea(30) state centred is 2 e_i - 1, so A g(s) = 2 A_i - A 1 is
// dominated by A 1 (norm ~30 against ~2) and 900 states fell into 35 codes of 64 bits; in
// [0, 1] they keep 900 distinct codes (tests/explore/sim_hash_test.cpp).
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
