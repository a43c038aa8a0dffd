#include "concord/envs/exploration/cartpole_swing_up.h"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace concord::envs {

CartPoleSwingUp::CartPoleSwingUp() : FloatEnv(make_spec()) {}

EnvSpec CartPoleSwingUp::make_spec() {
  // x is bounded at twice its limit, as CartPole-v1 bounds its thresholds; velocities are unbounded.
  const float inf = std::numeric_limits<float>::infinity();
  const float x_high = static_cast<float>(2 * kXLimit);
  return EnvSpec{"CartPoleSwingUp-v0",
                 Space::box({5}, {-x_high, -inf, -1.0f, -1.0f, -inf}, {x_high, inf, 1.0f, 1.0f, inf}),
                 Space::discrete(2), kMaxEpisodeSteps, /*reward_threshold=*/std::nullopt};
}

void CartPoleSwingUp::reset_state(float* observation) {
  const double bound = CartPole::kResetBound;
  state_.x = core::uniform(rng(), -bound, bound);
  state_.x_dot = core::uniform(rng(), -bound, bound);
  state_.theta = CartPole::kPi + core::uniform(rng(), -bound, bound);
  state_.theta_dot = core::uniform(rng(), -bound, bound);
  write_observation(observation);
}

StepResult CartPoleSwingUp::step_state(const Action& action, float* observation) {
  if (action.index != 0 && action.index != 1) {
    throw std::invalid_argument(spec().id + ": action " + std::to_string(action.index) + " is outside Discrete(2)");
  }
  state_ = CartPole::next_state(state_, action.index);
  StepResult result;
  const bool on_track = std::abs(state_.x) <= kXLimit;
  result.terminated = !on_track;
  result.reward = on_track && std::cos(state_.theta) > kUprightCosine ? 1.0f : 0.0f;
  write_observation(observation);
  return result;
}

void CartPoleSwingUp::write_observation(float* observation) const {
  observation[0] = static_cast<float>(state_.x);
  observation[1] = static_cast<float>(state_.x_dot);
  observation[2] = static_cast<float>(std::cos(state_.theta));
  observation[3] = static_cast<float>(std::sin(state_.theta));
  observation[4] = static_cast<float>(state_.theta_dot);
}

}  // namespace concord::envs
