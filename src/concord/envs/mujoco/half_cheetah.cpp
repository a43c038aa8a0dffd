#include "concord/envs/mujoco/half_cheetah.h"

#include <limits>

#include "concord/envs/mujoco/model_directory.h"

namespace concord::envs::mujoco {

TaskOptions HalfCheetah::default_options() {
  TaskOptions options;
  options.frame_skip = 5;
  options.forward_reward_weight = 1.0;
  options.ctrl_cost_weight = 0.1;
  options.reset_noise_scale = 0.1;
  return options;
}

HalfCheetah::HalfCheetah(const TaskOptions& options)
    : HalfCheetah(options,
                  MujocoModel::load(options.model_file.empty() ? shipped_model(kModelFile) : options.model_file)) {}

HalfCheetah::HalfCheetah(const TaskOptions& options, std::shared_ptr<const MujocoModel> model)
    : MujocoEnv(
          [&] {
            model->require_sizes(kId, 6, 9, 9);
            const int dim = options.exclude_current_positions_from_observation ? 17 : 18;
            return EnvSpec{kId, observation_space_of(dim), action_space_of(*model, kId), /*max_episode_steps=*/1000,
                           /*reward_threshold=*/4800.0};
          }(),
          model, options.frame_skip),
      options_(options) {
  report_locomotion_info(/*survive=*/false, /*contact=*/false, Positions::kX);
}

void HalfCheetah::reset_state(float* observation) {
  reset_with_noise(options_.reset_noise_scale, /*normal_velocity=*/true);
  write_observation(observation);
}

StepResult HalfCheetah::step_state(const Action& action, float* observation) {
  const std::optional<double> x_velocity = simulate_x_velocity(action, [this] { return data()->qpos[0]; });
  write_observation(observation);
  if (!x_velocity) return diverged_step();
  return locomotion_step(options_, *x_velocity, action, /*healthy=*/true);
}

void HalfCheetah::write_observation(float* observation) const {
  write_qpos_qvel(observation, options_.exclude_current_positions_from_observation ? 1 : 0,
                  std::numeric_limits<double>::infinity());
}

}  // namespace concord::envs::mujoco
