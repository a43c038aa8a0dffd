#include "concord/envs/exploration/sparse_mountain_car.h"

#include <stdexcept>
#include <string>

namespace concord::envs {

SparseMountainCar::SparseMountainCar() : FloatEnv(make_spec()) {}

EnvSpec SparseMountainCar::make_spec() {
  const EnvSpec dense = MountainCar::make_spec();
  return EnvSpec{"SparseMountainCar-v0", dense.observation_space, dense.action_space, kMaxEpisodeSteps,
                 /*reward_threshold=*/std::nullopt};
}

void SparseMountainCar::reset_state(float* observation) {
  state_.position = core::uniform(rng(), MountainCar::kResetLow, MountainCar::kResetHigh);
  state_.velocity = 0.0;
  write_observation(observation);
}

StepResult SparseMountainCar::step_state(const Action& action, float* observation) {
  if (action.index < 0 || action.index > 2) {
    throw std::invalid_argument(spec().id + ": action " + std::to_string(action.index) + " is outside Discrete(3)");
  }
  state_ = MountainCar::next_state(state_, action.index);
  StepResult result;
  result.terminated = state_.position >= MountainCar::kGoalPosition && state_.velocity >= MountainCar::kGoalVelocity;
  result.reward = result.terminated ? 1.0f : 0.0f;
  write_observation(observation);
  return result;
}

void SparseMountainCar::write_observation(float* observation) const {
  observation[0] = static_cast<float>(state_.position);
  observation[1] = static_cast<float>(state_.velocity);
}

}  // namespace concord::envs
