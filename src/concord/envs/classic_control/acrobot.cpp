#include "concord/envs/classic_control/acrobot.h"

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

// Gymnasium's wrap(): shifts by whole turns until x lies in [low, high].
double wrap(double x, double low, double high) {
  const double turn = high - low;
  while (x > high) x = x - turn;
  while (x < low) x = x + turn;
  return x;
}

// Gymnasium's bound(): min(max(x, low), high), which std::min/std::max reproduce, NaN included.
double bound(double x, double low, double high) { return std::min(std::max(x, low), high); }

Acrobot::State axpy(const Acrobot::State& y, double h, const Acrobot::State& k) {
  return {y.theta1 + h * k.theta1, y.theta2 + h * k.theta2, y.dtheta1 + h * k.dtheta1, y.dtheta2 + h * k.dtheta2};
}

}  // namespace

Acrobot::Acrobot() : FloatEnv(make_spec()) {}

EnvSpec Acrobot::make_spec() {
  const float vel1 = static_cast<float>(kMaxVel1);
  const float vel2 = static_cast<float>(kMaxVel2);
  return EnvSpec{"Acrobot-v1",
                 Space::box({6}, {-1.0f, -1.0f, -1.0f, -1.0f, -vel1, -vel2}, {1.0f, 1.0f, 1.0f, 1.0f, vel1, vel2}),
                 Space::discrete(3), /*max_episode_steps=*/500, /*reward_threshold=*/-100.0};
}

Acrobot::State Acrobot::derivatives(const State& s, double torque) {
  constexpr double m1 = kLinkMass1;
  constexpr double m2 = kLinkMass2;
  constexpr double l1 = kLinkLength1;
  constexpr double lc1 = kLinkComPos1;
  constexpr double lc2 = kLinkComPos2;
  constexpr double i1 = kLinkMoi;
  constexpr double i2 = kLinkMoi;
  constexpr double g = kGravity;
  const double cos_t2 = std::cos(s.theta2);
  const double sin_t2 = std::sin(s.theta2);
  // Term for term in Gymnasium's evaluation order (cos(x - pi/2) included, not rewritten as sin),
  // so the double results agree with it up to the math library's sin and cos.
  const double d1 = m1 * (lc1 * lc1) + m2 * (l1 * l1 + lc2 * lc2 + 2 * l1 * lc2 * cos_t2) + i1 + i2;
  const double d2 = m2 * (lc2 * lc2 + l1 * lc2 * cos_t2) + i2;
  const double phi2 = m2 * lc2 * g * std::cos(s.theta1 + s.theta2 - kPi / 2.0);
  const double phi1 = -m2 * l1 * lc2 * (s.dtheta2 * s.dtheta2) * sin_t2 -
                      2 * m2 * l1 * lc2 * s.dtheta2 * s.dtheta1 * sin_t2 +
                      (m1 * lc1 + m2 * l1) * g * std::cos(s.theta1 - kPi / 2) + phi2;
  // The book's equation; the NIPS paper omits the dtheta1^2 term.
  const double ddtheta2 = (torque + d2 / d1 * phi1 - m2 * l1 * lc2 * (s.dtheta1 * s.dtheta1) * sin_t2 - phi2) /
                          (m2 * (lc2 * lc2) + i2 - (d2 * d2) / d1);
  const double ddtheta1 = -(d2 * ddtheta2 + phi1) / d1;
  return {s.dtheta1, s.dtheta2, ddtheta1, ddtheta2};
}

void Acrobot::reset_state(float* observation) {
  // Gymnasium draws in float64 and then casts the state to float32.
  state_.theta1 = static_cast<float>(core::uniform(rng(), -kResetBound, kResetBound));
  state_.theta2 = static_cast<float>(core::uniform(rng(), -kResetBound, kResetBound));
  state_.dtheta1 = static_cast<float>(core::uniform(rng(), -kResetBound, kResetBound));
  state_.dtheta2 = static_cast<float>(core::uniform(rng(), -kResetBound, kResetBound));
  write_observation(observation);
}

StepResult Acrobot::step_state(const Action& action, float* observation) {
  if (action.index < 0 || action.index > 2) throw_invalid_action(spec(), action.index);
  const double torque = kTorques[action.index];

  // One step of Gymnasium's rk4() over t = [0, dt]; the torque is held constant through it.
  const double dt = kDt;
  const double half_dt = dt / 2.0;
  const State& y0 = state_;
  const State k1 = derivatives(y0, torque);
  const State k2 = derivatives(axpy(y0, half_dt, k1), torque);
  const State k3 = derivatives(axpy(y0, half_dt, k2), torque);
  const State k4 = derivatives(axpy(y0, dt, k3), torque);
  const double w = dt / 6.0;
  State next;
  next.theta1 = y0.theta1 + w * (k1.theta1 + 2 * k2.theta1 + 2 * k3.theta1 + k4.theta1);
  next.theta2 = y0.theta2 + w * (k1.theta2 + 2 * k2.theta2 + 2 * k3.theta2 + k4.theta2);
  next.dtheta1 = y0.dtheta1 + w * (k1.dtheta1 + 2 * k2.dtheta1 + 2 * k3.dtheta1 + k4.dtheta1);
  next.dtheta2 = y0.dtheta2 + w * (k1.dtheta2 + 2 * k2.dtheta2 + 2 * k3.dtheta2 + k4.dtheta2);

  state_.theta1 = wrap(next.theta1, -kPi, kPi);
  state_.theta2 = wrap(next.theta2, -kPi, kPi);
  state_.dtheta1 = bound(next.dtheta1, -kMaxVel1, kMaxVel1);
  state_.dtheta2 = bound(next.dtheta2, -kMaxVel2, kMaxVel2);

  StepResult result;
  result.terminated = -std::cos(state_.theta1) - std::cos(state_.theta2 + state_.theta1) > 1.0;
  result.reward = result.terminated ? 0.0f : -1.0f;
  write_observation(observation);
  return result;
}

void Acrobot::write_observation(float* observation) const {
  observation[0] = static_cast<float>(std::cos(state_.theta1));
  observation[1] = static_cast<float>(std::sin(state_.theta1));
  observation[2] = static_cast<float>(std::cos(state_.theta2));
  observation[3] = static_cast<float>(std::sin(state_.theta2));
  observation[4] = static_cast<float>(state_.dtheta1);
  observation[5] = static_cast<float>(state_.dtheta2);
}

}  // namespace concord::envs
