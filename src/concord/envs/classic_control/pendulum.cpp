#include "concord/envs/classic_control/pendulum.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace concord::envs {
namespace {

[[noreturn]] void throw_missing_action(const EnvSpec& spec) {
  throw std::invalid_argument(spec.id + ": a Box action needs Action.values, got nullptr");
}

}  // namespace

Pendulum::Pendulum() : FloatEnv(make_spec()) {}

EnvSpec Pendulum::make_spec() {
  const float speed = static_cast<float>(kMaxSpeed);
  return EnvSpec{"Pendulum-v1", Space::box({3}, {-1.0f, -1.0f, -speed}, {1.0f, 1.0f, speed}),
                 Space::box({1}, -kMaxTorque, kMaxTorque), /*max_episode_steps=*/200,
                 /*reward_threshold=*/std::nullopt};
}

double Pendulum::angle_normalize(double x) {
  const double turn = 2 * kPi;
  // NumPy's float remainder: C fmod, shifted into the divisor's sign; an exact zero is +0.
  double mod = std::fmod(x + kPi, turn);
  if (mod != 0) {
    if (mod < 0) mod += turn;
  } else {
    mod = 0.0;
  }
  return mod - kPi;
}

void Pendulum::reset_state(float* observation) {
  state_.theta = core::uniform(rng(), -kResetTheta, kResetTheta);
  state_.theta_dot = core::uniform(rng(), -kResetThetaDot, kResetThetaDot);
  write_observation(observation);
}

StepResult Pendulum::step_state(const Action& action, float* observation) {
  if (action.values == nullptr) throw_missing_action(spec());
  // np.clip on the float32 action: the torque stays a float32 value (NaN passes through).
  const float clipped = std::min(std::max(action.values[0], -kMaxTorque), kMaxTorque);
  const double u = clipped;
  const double theta = state_.theta;
  const double theta_dot = state_.theta_dot;

  const double angle = angle_normalize(theta);
  const double cost = angle * angle + 0.1 * (theta_dot * theta_dot) + 0.001 * (u * u);

  double new_theta_dot =
      theta_dot + (3 * kGravity / (2 * kLength) * std::sin(theta) + 3.0 / (kMass * (kLength * kLength)) * u) * kDt;
  new_theta_dot = std::min(std::max(new_theta_dot, -kMaxSpeed), kMaxSpeed);
  state_.theta = theta + new_theta_dot * kDt;
  state_.theta_dot = new_theta_dot;

  StepResult result;
  result.reward = static_cast<float>(-cost);
  write_observation(observation);
  return result;
}

void Pendulum::write_observation(float* observation) const {
  observation[0] = static_cast<float>(std::cos(state_.theta));
  observation[1] = static_cast<float>(std::sin(state_.theta));
  observation[2] = static_cast<float>(state_.theta_dot);
}

}  // namespace concord::envs
