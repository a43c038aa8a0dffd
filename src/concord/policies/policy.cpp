#include "concord/policies/policy.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace concord::policies {

void check_finite(const algos::Metrics& metrics, const TrainingState& state) {
  for (const auto& [name, value] : metrics) {
    if (!std::isfinite(value)) {
      throw std::runtime_error(name + " became " + std::to_string(value) + " at update " +
                               std::to_string(state.updates) + " (step " + std::to_string(state.global_step) +
                               "); training stopped, the last checkpoint is intact");
    }
  }
}

}  // namespace concord::policies
