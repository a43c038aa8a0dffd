#include "concord/envs/classic_control/mountain_car_continuous.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace concord::envs {
namespace {

[[noreturn]] void throw_missing_action(const EnvSpec& spec) {
  throw std::invalid_argument(spec.id + ": a Box action needs Action.values, got nullptr");
}

}  // namespace

MountainCarContinuous::MountainCarContinuous() : FloatEnv(make_spec()) {}

EnvSpec MountainCarContinuous::make_spec() {
  return EnvSpec{"MountainCarContinuous-v0",
                 Space::box({2}, {static_cast<float>(kMinPosition), static_cast<float>(-kMaxSpeed)},
                            {static_cast<float>(kMaxPosition), static_cast<float>(kMaxSpeed)}),
                 Space::box({1}, static_cast<float>(kMinAction), static_cast<float>(kMaxAction)),
                 /*max_episode_steps=*/999, /*reward_threshold=*/90.0};
}

void MountainCarContinuous::reset_state(float* observation) {
  state_.position = core::uniform(rng(), kResetLow, kResetHigh);
  state_.velocity = 0.0;
  write_observation(observation);
}

StepResult MountainCarContinuous::step_state(const Action& action, float* observation) {
  if (action.values == nullptr) throw_missing_action(spec());
  const double requested = action.values[0];
  const double force = std::min(std::max(requested, kMinAction), kMaxAction);

  double position = state_.position;
  double velocity = state_.velocity;
  velocity += force * kPower - kGravity * std::cos(3 * position);
  if (velocity > kMaxSpeed) velocity = kMaxSpeed;
  if (velocity < -kMaxSpeed) velocity = -kMaxSpeed;
  position += velocity;
  if (position > kMaxPosition) position = kMaxPosition;
  if (position < kMinPosition) position = kMinPosition;
  if (position == kMinPosition && velocity < 0) velocity = 0.0;

  StepResult result;
  // Decided on the double values, before the state is rounded to float32.
  result.terminated = position >= kGoalPosition && velocity >= kGoalVelocity;
  const double goal_reward = result.terminated ? kGoalReward : 0.0;
  // The unclipped action, as Gymnasium has it.
  result.reward = static_cast<float>(goal_reward - requested * requested * kActionCost);

  // Gymnasium stores the state as float32, so the next step starts from the rounded values.
  state_.position = static_cast<float>(position);
  state_.velocity = static_cast<float>(velocity);
  write_observation(observation);
  return result;
}

void MountainCarContinuous::write_observation(float* observation) const {
  observation[0] = static_cast<float>(state_.position);
  observation[1] = static_cast<float>(state_.velocity);
}

}  // namespace concord::envs
