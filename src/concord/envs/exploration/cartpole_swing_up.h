#pragma once

#include "concord/envs/classic_control/cartpole.h"
#include "concord/envs/env.h"

namespace concord::envs {

// CartPole swing-up with a sparse reward, the setup of VIME (Houthooft et al., 2016) and
// #Exploration (Tang et al., 2017): CartPole-v1's cart, pole and equations of motion (Gymnasium's,
// +-10 N pushes, 0.02 s Euler steps) with no angle limit, the pole starting hanging down.
//
//   start: x, x_dot, theta - pi, theta_dot each in U[-0.05, 0.05)   (theta = 0 is upright)
//   reward 1 on a step ending with cos(theta) > 0.8 and |x| <= 3, else 0
//   terminated when |x| > 3; truncated after 500 steps
//
// Observation: float32 [x, x_dot, cos(theta), sin(theta), theta_dot] (the angle as cos and sin,
// so that it does not wrap). Actions: 0 push left, 1 push right.
class CartPoleSwingUp final : public FloatEnv {
 public:
  static constexpr double kXLimit = 3.0;
  static constexpr double kUprightCosine = 0.8;
  static constexpr int kMaxEpisodeSteps = 500;

  CartPoleSwingUp();

  // Id "CartPoleSwingUp-v0", Box(5) observations, Discrete(2), 500 steps, no reward threshold.
  static EnvSpec make_spec();

  // For tests: places the cart mid-episode; the step counter is left alone.
  void set_state(const CartPole::State& state) { state_ = state; }
  const CartPole::State& state() const { return state_; }

 private:
  void reset_state(float* observation) override;
  StepResult step_state(const Action& action, float* observation) override;
  void write_observation(float* observation) const;

  CartPole::State state_;
};

}  // namespace concord::envs
