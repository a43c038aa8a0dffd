#include "concord/envs/mujoco/sparse_half_cheetah.h"

#include <limits>

#include "concord/envs/mujoco/half_cheetah.h"
#include "concord/envs/mujoco/humanoid_observation.h"
#include "concord/envs/mujoco/model_directory.h"

namespace concord::envs::mujoco {

TaskOptions SparseHalfCheetah::default_options() { return HalfCheetah::default_options(); }

SparseHalfCheetah::SparseHalfCheetah(const TaskOptions& options)
    : SparseHalfCheetah(
          options, MujocoModel::load(options.model_file.empty() ? shipped_model(kModelFile) : options.model_file)) {}

SparseHalfCheetah::SparseHalfCheetah(const TaskOptions& options, std::shared_ptr<const MujocoModel> model)
    : MujocoEnv(
          [&] {
            model->require_sizes(kId, 6, 9, 9);
            const int dim = options.exclude_current_positions_from_observation ? 17 : 18;
            return EnvSpec{kId, observation_space_of(dim), action_space_of(*model, kId), /*max_episode_steps=*/1000,
                           /*reward_threshold=*/std::nullopt};
          }(),
          model, options.frame_skip),
      options_(options) {}

void SparseHalfCheetah::reset_state(float* observation) {
  reset_with_noise(options_.reset_noise_scale, /*normal_velocity=*/true);
  write_observation(observation);
}

StepResult SparseHalfCheetah::step_state(const Action& action, float* observation) {
  const bool stable = simulate(action);
  write_observation(observation);
  if (!stable) return diverged_step();
  StepResult result;
  result.reward = mass_center_x_now() > kGoalDistance ? 1.0f : 0.0f;
  return result;
}

double SparseHalfCheetah::mass_center_x_now() {
  // mj_step leaves the bodies' positions (xipos) at the state before its last integration.
  mj_kinematics(model(), data());
  return mass_center_x(model(), data());
}

void SparseHalfCheetah::write_observation(float* observation) const {
  write_qpos_qvel(observation, options_.exclude_current_positions_from_observation ? 1 : 0,
                  std::numeric_limits<double>::infinity());
}

}  // namespace concord::envs::mujoco
