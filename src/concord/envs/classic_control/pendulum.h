#pragma once

#include "concord/envs/env.h"

namespace concord::envs {

// Pendulum-v1 as Gymnasium defines it (classic_control/pendulum.py, g = 10): swing a pendulum up
// and hold it upright with a torque in [-2, 2]. Theta is 0 upright and is never wrapped in the
// state; the reward wraps it to [-pi, pi).
//
// Observation: float32 [cos theta, sin theta, theta_dot]. Reward:
// -(theta^2 + 0.1 theta_dot^2 + 0.001 torque^2), from the state before the step and the clipped
// torque. Never terminates; truncated after 200 steps. The state is kept in double, as Gymnasium
// keeps it in float64.
class Pendulum final : public FloatEnv {
 public:
  static constexpr double kMaxSpeed = 8.0;
  static constexpr float kMaxTorque = 2.0f;
  static constexpr double kDt = 0.05;
  static constexpr double kGravity = 10.0;
  static constexpr double kMass = 1.0;
  static constexpr double kLength = 1.0;
  static constexpr double kPi = 3.141592653589793;
  static constexpr double kResetTheta = kPi;  // theta starts in U[-pi, pi), theta_dot in U[-1, 1).
  static constexpr double kResetThetaDot = 1.0;

  struct State {
    double theta = 0.0;
    double theta_dot = 0.0;
  };

  Pendulum();

  // Id "Pendulum-v1", Box(3) observations, Box(1) actions in [-2, 2], 200 steps, no threshold.
  static EnvSpec make_spec();

  // Gymnasium's angle_normalize(): ((x + pi) mod 2 pi) - pi with NumPy's floored modulo.
  static double angle_normalize(double x);

  // For tests: places the env mid-episode at `state`; the step counter is left alone.
  void set_state(const State& state) { state_ = state; }
  // For tests: the current double-precision state.
  const State& state() const { return state_; }

 private:
  void reset_state(float* observation) override;
  StepResult step_state(const Action& action, float* observation) override;
  void write_observation(float* observation) const;

  State state_;
};

}  // namespace concord::envs
