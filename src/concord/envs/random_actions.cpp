#include "concord/envs/random_actions.h"

#include <cmath>
#include <stdexcept>

namespace concord::envs {
namespace {

// Exp(1) from a uniform in [0, 1): -log(1 - u), where 1 - u lies in (0, 1].
double standard_exponential(core::Rng& rng) { return -std::log1p(-core::uniform(rng, 0.0, 1.0)); }

}  // namespace

double standard_normal(core::Rng& rng) {
  constexpr double kTwoPi = 6.283185307179586;
  const double u1 = 1.0 - core::uniform(rng, 0.0, 1.0);  // (0, 1], so log(u1) is finite.
  const double u2 = core::uniform(rng, 0.0, 1.0);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(kTwoPi * u2);
}

void sample_actions(const Space& space, core::Rng& rng, int64_t count, int64_t* out) {
  if (!space.is_discrete()) {
    throw std::invalid_argument("sample_actions: int64 actions need a Discrete space, got " + space.to_string());
  }
  const int64_t n = space.n();
  for (int64_t i = 0; i < count; ++i) out[i] = core::uniform_index(rng, n);
}

void sample_actions(const Space& space, core::Rng& rng, int64_t count, float* out) {
  if (space.is_discrete()) {
    throw std::invalid_argument("sample_actions: float actions need a Box space, got " + space.to_string());
  }
  const int64_t dim = space.flat_size();
  const float* low = space.low().data();
  const float* high = space.high().data();
  for (int64_t i = 0; i < count; ++i) {
    float* action = out + i * dim;
    for (int64_t d = 0; d < dim; ++d) {
      const bool low_finite = std::isfinite(low[d]);
      const bool high_finite = std::isfinite(high[d]);
      double value;
      if (low_finite && high_finite) {
        value = core::uniform(rng, low[d], high[d]);
      } else if (low_finite) {
        value = low[d] + standard_exponential(rng);
      } else if (high_finite) {
        value = high[d] - standard_exponential(rng);
      } else {
        value = standard_normal(rng);
      }
      action[d] = static_cast<float>(value);
    }
  }
}

}  // namespace concord::envs
