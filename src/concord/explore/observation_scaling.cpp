#include "concord/explore/observation_scaling.h"

#include <cmath>
#include <stdexcept>

#include <torch/torch.h>

namespace concord::explore {

ObservationScaling::ObservationScaling(const envs::Space& observation_space, bool append_bias)
    : append_bias_(append_bias) {
  if (observation_space.is_discrete()) {
    throw std::invalid_argument("exploration hashing needs Box observations, got " + observation_space.to_string());
  }
  const int64_t dim = observation_space.flat_size();
  std::vector<float> offset(static_cast<size_t>(dim), 0.0f);
  std::vector<float> scale(static_cast<size_t>(dim), 1.0f);
  for (size_t i = 0; i < offset.size(); ++i) {
    const float low = observation_space.low()[i];
    const float high = observation_space.high()[i];
    if (std::isfinite(low) && std::isfinite(high) && high > low) {
      offset[i] = low;
      scale[i] = 1.0f / (high - low);
    }
  }
  offset_ = torch::tensor(offset);
  scale_ = torch::tensor(scale);
  output_dim_ = dim + (append_bias ? 1 : 0);
}

torch::Tensor ObservationScaling::operator()(const torch::Tensor& observations) const {
  torch::Tensor scaled = (observations.to(torch::kFloat32) - offset_) * scale_;
  if (!append_bias_) return scaled;
  return torch::cat({scaled, torch::ones({scaled.size(0), 1}, scaled.options())}, 1);
}

}  // namespace concord::explore
