#pragma once

#include <memory>
#include <string>
#include <vector>

#include "concord/envs/env.h"

namespace concord::envs {

// Another environment with some observation entries always zero: RL Baselines3 Zoo's
// MaskVelocityWrapper, which makes a task partially observable by hiding its velocities, so that
// only an agent with memory can act well (CartPoleNoVel-v1 masks CartPole's cart and pole
// velocities, PendulumNoVel-v1 Pendulum's angular velocity). Everything else is the wrapped
// env's: its dynamics, rewards, termination, action space and random stream (seeded through this
// env's reset), and its time limit, which this env takes over so that env.max_episode_steps
// applies once.
class MaskedObservation final : public FloatEnv {
 public:
  // `keep[i]` false zeroes observation entry i; keep has one entry per observation element.
  // Throws std::invalid_argument if it does not, or if `inner` does not observe floats.
  MaskedObservation(std::string id, std::unique_ptr<Env> inner, std::vector<bool> keep);

  static std::unique_ptr<Env> cartpole_no_velocity();  // "CartPoleNoVel-v1": keeps x and theta
  static std::unique_ptr<Env> pendulum_no_velocity();  // "PendulumNoVel-v1": keeps cos and sin theta

 private:
  void reset_state(float* observation) override;
  StepResult step_state(const Action& action, float* observation) override;
  void mask(float* observation) const;

  std::unique_ptr<Env> inner_;
  std::vector<bool> keep_;
};

}  // namespace concord::envs
