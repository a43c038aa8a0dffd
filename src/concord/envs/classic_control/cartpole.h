#pragma once

#include "concord/envs/env.h"

namespace concord::envs {

// CartPole-v1 as Gymnasium defines it (classic_control/cartpole.py): a pole hinged on a cart that
// is pushed left (action 0) or right (action 1) with a fixed force, integrated with explicit Euler.
//
// Observation: float32 [x, x_dot, theta, theta_dot]. Reward: +1 on every step, including the one
// that terminates, and 0 on any step taken after termination without a reset. Terminates when
// |x| > 2.4 or |theta| > 12 degrees; truncated after 500 steps. The state is kept in double, as
// Gymnasium keeps it in float64.
class CartPole final : public FloatEnv {
 public:
  static constexpr double kGravity = 9.8;
  static constexpr double kMassCart = 1.0;
  static constexpr double kMassPole = 0.1;
  static constexpr double kTotalMass = kMassPole + kMassCart;
  static constexpr double kHalfLength = 0.5;  // Gymnasium's `length` is half the pole's length.
  static constexpr double kPoleMassLength = kMassPole * kHalfLength;
  static constexpr double kForceMag = 10.0;
  static constexpr double kTau = 0.02;  // Seconds per step.
  static constexpr double kPi = 3.141592653589793;
  static constexpr double kThetaThreshold = 12 * 2 * kPi / 360;  // Evaluated as Gymnasium does.
  static constexpr double kXThreshold = 2.4;
  static constexpr double kResetBound = 0.05;  // Every state variable starts in U[-0.05, 0.05).

  struct State {
    double x = 0.0;
    double x_dot = 0.0;
    double theta = 0.0;
    double theta_dot = 0.0;
  };

  CartPole();

  // Id "CartPole-v1", Box(4) observations, Discrete(2) actions, 500 steps, threshold 475.
  static EnvSpec make_spec();

  // Gymnasium's equations of motion and Euler step for action 0 (push left) or 1 (push right),
  // unchecked; shared with CartPoleSwingUp.
  static State next_state(const State& state, int64_t action);

  // For tests: places the env mid-episode at `state` (clearing the "already terminated" mark);
  // the step counter is left alone.
  void set_state(const State& state);
  // For tests: the current double-precision state.
  const State& state() const { return state_; }

 private:
  void reset_state(float* observation) override;
  StepResult step_state(const Action& action, float* observation) override;
  void write_observation(float* observation) const;

  State state_;
  // Gymnasium's steps_beyond_terminated: steps after termination earn 0 instead of 1.
  bool terminated_before_ = false;
};

}  // namespace concord::envs
