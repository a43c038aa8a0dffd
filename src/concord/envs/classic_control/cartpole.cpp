#include "concord/envs/classic_control/cartpole.h"

#include <cmath>
#include <limits>
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

CartPole::CartPole() : FloatEnv(make_spec()) {}

EnvSpec CartPole::make_spec() {
  // Twice the termination thresholds, so the observation that terminates is still in the space.
  // The velocities are unbounded (Gymnasium 1.0 uses inf; 0.29 used float32's max).
  const float inf = std::numeric_limits<float>::infinity();
  const float x_high = static_cast<float>(kXThreshold * 2);
  const float theta_high = static_cast<float>(kThetaThreshold * 2);
  return EnvSpec{"CartPole-v1", Space::box({4}, {-x_high, -inf, -theta_high, -inf}, {x_high, inf, theta_high, inf}),
                 Space::discrete(2), /*max_episode_steps=*/500, /*reward_threshold=*/475.0};
}

void CartPole::set_state(const State& state) {
  state_ = state;
  terminated_before_ = false;
}

void CartPole::reset_state(float* observation) {
  state_.x = core::uniform(rng(), -kResetBound, kResetBound);
  state_.x_dot = core::uniform(rng(), -kResetBound, kResetBound);
  state_.theta = core::uniform(rng(), -kResetBound, kResetBound);
  state_.theta_dot = core::uniform(rng(), -kResetBound, kResetBound);
  terminated_before_ = false;
  write_observation(observation);
}

StepResult CartPole::step_state(const Action& action, float* observation) {
  if (action.index != 0 && action.index != 1) throw_invalid_action(spec(), action.index);
  state_ = next_state(state_, action.index);

  StepResult result;
  result.terminated = state_.x < -kXThreshold || state_.x > kXThreshold || state_.theta < -kThetaThreshold ||
                      state_.theta > kThetaThreshold;
  if (!result.terminated) {
    result.reward = 1.0f;
  } else if (!terminated_before_) {
    terminated_before_ = true;
    result.reward = 1.0f;
  } else {
    result.reward = 0.0f;
  }
  write_observation(observation);
  return result;
}

CartPole::State CartPole::next_state(const State& state, int64_t action) {
  const double force = action == 1 ? kForceMag : -kForceMag;
  const double cos_theta = std::cos(state.theta);
  const double sin_theta = std::sin(state.theta);

  // Florian's corrected cart-pole equations, term for term in Gymnasium's evaluation order, so
  // the double results agree with it up to the math library's sin and cos.
  const double temp = (force + kPoleMassLength * (state.theta_dot * state.theta_dot) * sin_theta) / kTotalMass;
  const double theta_acc = (kGravity * sin_theta - cos_theta * temp) /
                           (kHalfLength * (4.0 / 3.0 - kMassPole * (cos_theta * cos_theta) / kTotalMass));
  const double x_acc = temp - kPoleMassLength * theta_acc * cos_theta / kTotalMass;

  // Explicit Euler: positions advance with the old velocities.
  State next;
  next.x = state.x + kTau * state.x_dot;
  next.x_dot = state.x_dot + kTau * x_acc;
  next.theta = state.theta + kTau * state.theta_dot;
  next.theta_dot = state.theta_dot + kTau * theta_acc;
  return next;
}

void CartPole::write_observation(float* observation) const {
  observation[0] = static_cast<float>(state_.x);
  observation[1] = static_cast<float>(state_.x_dot);
  observation[2] = static_cast<float>(state_.theta);
  observation[3] = static_cast<float>(state_.theta_dot);
}

}  // namespace concord::envs
