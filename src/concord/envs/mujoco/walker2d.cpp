#include "concord/envs/mujoco/walker2d.h"

#include <limits>

#include "concord/envs/mujoco/model_directory.h"

namespace concord::envs::mujoco {
namespace {

constexpr double kVelocityLimit = 10.0;

bool inside(double value, const std::pair<double, double>& range) {
  return range.first < value && value < range.second;
}

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
      options_(options) {}

bool Walker2d::is_healthy() const {
  const mjData* d = data();
  return inside(d->qpos[1], options_.healthy_z_range) && inside(d->qpos[2], options_.healthy_angle_range);
}

void Walker2d::reset_state(float* observation) {
  reset_with_noise(options_.reset_noise_scale, /*normal_velocity=*/false);
  write_observation(observation);
}

StepResult Walker2d::step_state(const Action& action, float* observation) {
  const double x_before = data()->qpos[0];
  const bool stable = simulate(action);
  const double x_velocity = (data()->qpos[0] - x_before) / dt();
  write_observation(observation);
  StepResult result;
  if (!stable) {
    result.terminated = true;
    return result;
  }
  const bool healthy = is_healthy();
  const double forward_reward = options_.forward_reward_weight * x_velocity;
  const double healthy_reward = healthy ? options_.healthy_reward : 0.0;
  const double ctrl_cost = options_.ctrl_cost_weight * action_square_sum(action);
  result.reward = static_cast<float>(forward_reward + healthy_reward - ctrl_cost);
  result.terminated = !healthy && options_.terminate_when_unhealthy;
  return result;
}

void Walker2d::write_observation(float* observation) const {
  write_qpos_qvel(observation, options_.exclude_current_positions_from_observation ? 1 : 0, kVelocityLimit);
}

}  // namespace concord::envs::mujoco
