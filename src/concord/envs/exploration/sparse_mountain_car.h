#pragma once

#include "concord/envs/classic_control/mountain_car.h"
#include "concord/envs/env.h"

namespace concord::envs {

// MountainCar with a sparse reward (the #Exploration benchmark of Tang et al., 2017 and VIME):
// Gymnasium's MountainCar-v0 dynamics, start state and goal, but the reward is 1 on the step that
// reaches the goal (position >= 0.5, velocity >= 0, which terminates) and 0 on every other step.
// Episodes are truncated after 500 steps, rllab's horizon in those papers (Gymnasium's 200 leaves
// even a good explorer few chances).
class SparseMountainCar final : public FloatEnv {
 public:
  static constexpr int kMaxEpisodeSteps = 500;

  SparseMountainCar();

  // Id "SparseMountainCar-v0", MountainCar-v0's spaces, 500 steps, no reward threshold.
  static EnvSpec make_spec();

  // For tests: places the car mid-episode; the step counter is left alone.
  void set_state(const MountainCar::State& state) { state_ = state; }
  const MountainCar::State& state() const { return state_; }

 private:
  void reset_state(float* observation) override;
  StepResult step_state(const Action& action, float* observation) override;
  void write_observation(float* observation) const;

  MountainCar::State state_;
};

}  // namespace concord::envs
