#pragma once

#include "concord/envs/env.h"

namespace concord::envs {

// MountainCar-v0 as Gymnasium defines it (classic_control/mountain_car.py): an underpowered car
// in a valley of height sin(3x) that must rock back and forth to reach the flag at x = 0.5.
// Actions: 0 accelerate left, 1 coast, 2 accelerate right.
//
// Observation: float32 [position, velocity]. Reward: -1 per step. Terminates on reaching
// position >= 0.5 with velocity >= 0; truncated after 200 steps. Hitting the left wall is
// inelastic (velocity becomes 0). The state is kept in double, as Gymnasium keeps it in float64.
class MountainCar final : public FloatEnv {
 public:
  static constexpr double kMinPosition = -1.2;
  static constexpr double kMaxPosition = 0.6;
  static constexpr double kMaxSpeed = 0.07;
  static constexpr double kGoalPosition = 0.5;
  static constexpr double kGoalVelocity = 0.0;
  static constexpr double kForce = 0.001;
  static constexpr double kGravity = 0.0025;
  static constexpr double kResetLow = -0.6;  // The position starts in U[-0.6, -0.4), velocity 0.
  static constexpr double kResetHigh = -0.4;

  struct State {
    double position = 0.0;
    double velocity = 0.0;
  };

  MountainCar();

  // Id "MountainCar-v0", Box(2) observations, Discrete(3) actions, 200 steps, threshold -110.
  static EnvSpec make_spec();

  // Gymnasium's transition for an action in {0, 1, 2} (unchecked), shared with SparseMountainCar.
  static State next_state(const State& state, int64_t action);

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
