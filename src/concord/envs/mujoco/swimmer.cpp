#include "concord/envs/mujoco/swimmer.h"

#include <limits>
#include <optional>
#include <utility>

#include "concord/envs/mujoco/model_directory.h"

namespace concord::envs::mujoco {

TaskOptions Swimmer::default_options() {
  TaskOptions options;
  options.frame_skip = 4;
  options.forward_reward_weight = 1.0;
  options.ctrl_cost_weight = 1e-4;
  options.reset_noise_scale = 0.1;
  return options;
}

Swimmer::Swimmer(const TaskOptions& options)
    : Swimmer(options, MujocoModel::load(options.model_file.empty() ? shipped_model(kModelFile) : options.model_file)) {
}

Swimmer::Swimmer(const TaskOptions& options, std::shared_ptr<const MujocoModel> model)
    : MujocoEnv(
          [&] {
            model->require_sizes(kId, 2, 5, 5);
            const int dim = options.exclude_current_positions_from_observation ? 8 : 10;
            return EnvSpec{kId, observation_space_of(dim), action_space_of(*model, kId), /*max_episode_steps=*/1000,
                           /*reward_threshold=*/360.0};
          }(),
          model, options.frame_skip),
      options_(options) {
  report_locomotion_info(/*survive=*/false, /*contact=*/false, Positions::kXY);
}

void Swimmer::reset_state(float* observation) {
  reset_with_noise(options_.reset_noise_scale, /*normal_velocity=*/false);
  write_observation(observation);
}

StepResult Swimmer::step_state(const Action& action, float* observation) {
  const std::optional<std::pair<double, double>> velocity =
      simulate_xy_velocity(action, [this] { return std::make_pair(data()->qpos[0], data()->qpos[1]); });
  write_observation(observation);
  if (!velocity) return diverged_step();
  return locomotion_step(options_, velocity->first, action, /*healthy=*/true, /*contact_cost=*/0.0, velocity->second);
}

void Swimmer::write_observation(float* observation) const {
  write_qpos_qvel(observation, options_.exclude_current_positions_from_observation ? 2 : 0,
                  std::numeric_limits<double>::infinity());
}

}  // namespace concord::envs::mujoco
