#pragma once

#include "concord/envs/env.h"

namespace concord::envs {

// MountainCarContinuous-v0 as Gymnasium defines it (classic_control/continuous_mountain_car.py):
// the mountain car with a continuous force in [-1, 1], scaled by a power of 0.0015.
//
// Observation: float32 [position, velocity]. Reward: -0.1 * action^2 per step, plus 100 on the
// step that reaches position >= 0.45 with velocity >= 0 (which terminates); truncated after 999
// steps. As in Gymnasium, the force is clipped to [-1, 1] but the penalty uses the action as
// given, so actions outside the box cost more without pushing harder.
//
// Precision as in Gymnasium: the initial state is float64, each step computes in double and then
// stores the state as float32 (the next step starts from the rounded values).
class MountainCarContinuous final : public FloatEnv {
 public:
  static constexpr double kMinAction = -1.0;
  static constexpr double kMaxAction = 1.0;
  static constexpr double kMinPosition = -1.2;
  static constexpr double kMaxPosition = 0.6;
  static constexpr double kMaxSpeed = 0.07;
  static constexpr double kGoalPosition = 0.45;
  static constexpr double kGoalVelocity = 0.0;
  static constexpr double kPower = 0.0015;
  static constexpr double kGravity = 0.0025;
  static constexpr double kGoalReward = 100.0;
  static constexpr double kActionCost = 0.1;
  static constexpr double kResetLow = -0.6;  // The position starts in U[-0.6, -0.4), velocity 0.
  static constexpr double kResetHigh = -0.4;

  struct State {
    double position = 0.0;
    double velocity = 0.0;
  };

  MountainCarContinuous();

  // Id "MountainCarContinuous-v0", Box(2) observations, Box(1) actions in [-1, 1], 999 steps,
  // threshold 90.
  static EnvSpec make_spec();

  // For tests: places the env mid-episode at `state` (used as given, not rounded to float32);
  // the step counter is left alone.
  void set_state(const State& state) { state_ = state; }
  // For tests: the current state (float32 values after any step).
  const State& state() const { return state_; }

 private:
  void reset_state(float* observation) override;
  StepResult step_state(const Action& action, float* observation) override;
  void write_observation(float* observation) const;

  State state_;
};

}  // namespace concord::envs
