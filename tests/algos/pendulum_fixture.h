#pragma once

// Pendulum-shaped SAC fixtures shared by the algos tests (sac_test, fused_networks_update_test):
// 3-dim observations, one action in [-2, 2].

#include <cstdint>

#include <ATen/ops/rand.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/zeros.h>

#include "concord/algos/experience.h"
#include "concord/algos/sac.h"

namespace concord::algos::test_util {

// Small networks (16-16 ReLU) and replay (64, batches of 8, learning from step 10).
inline SacConfig small_pendulum_sac_config() {
  SacConfig config;
  config.buffer_size = 64;
  config.batch_size = 8;
  config.learning_starts = 10;
  config.network.obs_shape = {3};
  config.network.action_kind = nn::ActionKind::kContinuous;
  config.network.action_dim = 1;
  config.network.hidden_sizes = {16, 16};
  config.network.activation = "relu";
  config.network.action_low = {-2.0};
  config.network.action_high = {2.0};
  return config;
}

// n random transitions (experience.h's fields), rewards ~ N(0, 1), every third terminated.
inline TensorMap random_pendulum_transitions(int64_t n) {
  TensorMap step;
  step[transition::kObservations] = at::randn({n, 3});
  step[transition::kActions] = at::rand({n, 1}) * 4.0 - 2.0;
  step[transition::kRewards] = at::randn({n});
  at::Tensor terminated = at::zeros({n});
  for (int64_t i = 0; i < n; i += 3) terminated[i] = 1.0;
  step[transition::kTerminated] = terminated;
  step[transition::kTruncated] = at::zeros({n});
  step[transition::kNextObservations] = at::randn({n, 3});
  return step;
}

}  // namespace concord::algos::test_util
