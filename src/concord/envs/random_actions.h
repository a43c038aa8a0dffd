#pragma once

#include <cstdint>

#include "concord/core/rng.h"
#include "concord/envs/space.h"

namespace concord::envs {

// Random actions for a whole batch, drawn as Gymnasium's Space.sample() draws them:
//   Discrete(n): a uniform index in [0, n) (core::uniform_index);
//   Box, per element: uniform in [low, high) when both bounds are finite, a standard normal
//   when both are infinite, low + Exp(1) or high - Exp(1) when only one is.
// Every draw comes from `rng` through core's platform-independent helpers, so a seed gives the
// same actions everywhere. Used by `concord rollout` and the benchmarks.

// Writes `count` indices into out[0..count). Throws std::invalid_argument unless Discrete.
void sample_actions(const Space& space, core::Rng& rng, int64_t count, int64_t* out);

// Writes `count` actions of space.flat_size() floats each into out[0..count * flat_size).
// Throws std::invalid_argument unless Box.
void sample_actions(const Space& space, core::Rng& rng, int64_t count, float* out);

// A standard normal draw (Box-Muller on core::uniform), the same on every platform.
double standard_normal(core::Rng& rng);

}  // namespace concord::envs
