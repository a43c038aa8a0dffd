#include "concord/envs/mujoco/walker2d.h"

#include <limits>

#include "concord/envs/mujoco/model_directory.h"

namespace concord::envs::mujoco {
namespace {

constexpr double kVelocityLimit = 10.0;

}  // namespace

TaskOptions Walker2d::default_options() {
  TaskOptions options;
  options.frame_skip = 4;
  options.forward_reward_weight = 1.0;
  options.ctrl_cost_weight = 1e-3;
  options.healthy_reward = 1.0;
  options.healthy_z_range = {0.8, 2.0};
  options.healthy_angle_range = {-1.0, 1.0};
  options.reset_noise_scale = 5e-3;
  return options;
}

Walker2d::Walker2d(const TaskOptions& options)
    : Walker2d(options,
               MujocoModel::load(options.model_file.empty() ? shipped_model(kModelFile) : options.model_file)) {}

Walker2d::Walker2d(const TaskOptions& options, std::shared_ptr<const MujocoModel> model)
    : MujocoEnv(
          [&] {
            model->require_sizes(kId, 6, 9, 9);
            const int dim = options.exclude_current_positions_from_observation ? 17 : 18;
            return EnvSpec{kId, observation_space_of(dim), action_space_of(*model, kId), /*max_episode_steps=*/1000,
                           /*reward_threshold=*/std::nullopt};
          }(),
          model, options.frame_skip),
      options_(options) {
  report_locomotion_info(/*survive=*/true, /*contact=*/false, Positions::kXZ);
}

bool Walker2d::is_healthy() const {
  const mjData* d = data();
  return inside_open(d->qpos[1], options_.healthy_z_range) && inside_open(d->qpos[2], options_.healthy_angle_range);
}

void Walker2d::reset_state(float* observation) {
  reset_with_noise(options_.reset_noise_scale, /*normal_velocity=*/false);
  write_observation(observation);
}

StepResult Walker2d::step_state(const Action& action, float* observation) {
  const std::optional<double> x_velocity = simulate_x_velocity(action, [this] { return data()->qpos[0]; });
  write_observation(observation);
  if (!x_velocity) return diverged_step();
  return locomotion_step(options_, *x_velocity, action, is_healthy());
}

void Walker2d::write_observation(float* observation) const {
  write_qpos_qvel(observation, options_.exclude_current_positions_from_observation ? 1 : 0, kVelocityLimit);
}

}  // namespace concord::envs::mujoco
