#include "concord/envs/classic_control/mountain_car.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace concord::envs {
namespace {

// Out of line so that the hot path of step_state holds only the comparison.
[[noreturn]] void throw_invalid_action(const EnvSpec& spec, int64_t index) {
  throw std::invalid_argument(spec.id + ": action " + std::to_string(index) + " is outside " +
                              spec.action_space.to_string());
}

}  // namespace

MountainCar::MountainCar() : FloatEnv(make_spec()) {}

EnvSpec MountainCar::make_spec() {
  return EnvSpec{"MountainCar-v0",
                 Space::box({2}, {static_cast<float>(kMinPosition), static_cast<float>(-kMaxSpeed)},
                            {static_cast<float>(kMaxPosition), static_cast<float>(kMaxSpeed)}),
                 Space::discrete(3), /*max_episode_steps=*/200, /*reward_threshold=*/-110.0};
}

void MountainCar::reset_state(float* observation) {
  state_.position = core::uniform(rng(), kResetLow, kResetHigh);
  state_.velocity = 0.0;
  write_observation(observation);
}

StepResult MountainCar::step_state(const Action& action, float* observation) {
  if (action.index < 0 || action.index > 2) throw_invalid_action(spec(), action.index);
  state_ = next_state(state_, action.index);

  StepResult result;
  result.terminated = state_.position >= kGoalPosition && state_.velocity >= kGoalVelocity;
  result.reward = -1.0f;
  write_observation(observation);
  return result;
}

MountainCar::State MountainCar::next_state(const State& state, int64_t action) {
  double position = state.position;
  double velocity = state.velocity;
  // Gymnasium's `velocity += a + b` sums the two accelerations before adding them.
  velocity += static_cast<double>(action - 1) * kForce + std::cos(3 * position) * (-kGravity);
  velocity = std::min(std::max(velocity, -kMaxSpeed), kMaxSpeed);
  position += velocity;
  position = std::min(std::max(position, kMinPosition), kMaxPosition);
  if (position == kMinPosition && velocity < 0) velocity = 0.0;
  return State{position, velocity};
}

void MountainCar::write_observation(float* observation) const {
  observation[0] = static_cast<float>(state_.position);
  observation[1] = static_cast<float>(state_.velocity);
}

}  // namespace concord::envs
