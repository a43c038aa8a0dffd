#pragma once

#include "concord/envs/env.h"

namespace concord::envs {

// Acrobot-v1 as Gymnasium defines it (classic_control/acrobot.py): two links hanging from a fixed
// pivot, with torque -1, 0 or +1 (actions 0, 1, 2) applied at the joint between them. Dynamics
// are the "book" equations of Sutton & Barto, integrated by one classic RK4 step of 0.2 s.
//
// Observation: float32 [cos t1, sin t1, cos t2, sin t2, dt1, dt2]. Reward: -1 per step, 0 on the
// step that terminates. Terminates when the tip rises above one link length over the pivot
// (-cos t1 - cos(t1 + t2) > 1); truncated after 500 steps.
//
// Precision as in Gymnasium: the initial state is drawn and rounded to float32; every step then
// integrates and stores it in double.
class Acrobot final : public FloatEnv {
 public:
  static constexpr double kDt = 0.2;
  static constexpr double kLinkLength1 = 1.0;
  static constexpr double kLinkMass1 = 1.0;
  static constexpr double kLinkMass2 = 1.0;
  static constexpr double kLinkComPos1 = 0.5;  // Centre of mass of each link, from its pivot.
  static constexpr double kLinkComPos2 = 0.5;
  static constexpr double kLinkMoi = 1.0;  // Moment of inertia of either link.
  static constexpr double kGravity = 9.8;
  static constexpr double kPi = 3.141592653589793;
  static constexpr double kMaxVel1 = 4 * kPi;
  static constexpr double kMaxVel2 = 9 * kPi;
  static constexpr double kTorques[3] = {-1.0, 0.0, 1.0};
  static constexpr double kResetBound = 0.1;  // Every state variable starts in U[-0.1, 0.1).

  struct State {
    double theta1 = 0.0;  // Angle of link 1 from straight down.
    double theta2 = 0.0;  // Angle of link 2 relative to link 1.
    double dtheta1 = 0.0;
    double dtheta2 = 0.0;
  };

  Acrobot();

  // Id "Acrobot-v1", Box(6) observations, Discrete(3) actions, 500 steps, threshold -100.
  static EnvSpec make_spec();

  // The book equations of motion: the time derivative of `s` under `torque`.
  static State derivatives(const State& s, double torque);

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
