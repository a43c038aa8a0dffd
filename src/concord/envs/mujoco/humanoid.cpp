#include "concord/envs/mujoco/humanoid.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <utility>

#include "concord/envs/mujoco/humanoid_observation.h"
#include "concord/envs/mujoco/model_directory.h"

namespace concord::envs::mujoco {

TaskOptions Humanoid::default_options() {
  TaskOptions options;
  options.frame_skip = 5;
  options.forward_reward_weight = 1.25;
  options.ctrl_cost_weight = 0.1;
  options.contact_cost_weight = 5e-7;
  options.contact_cost_range = {-std::numeric_limits<double>::infinity(), 10.0};
  options.healthy_reward = 5.0;
  options.healthy_z_range = {1.0, 2.0};
  options.reset_noise_scale = 1e-2;
  return options;
}

Humanoid::Humanoid(const TaskOptions& options)
    : Humanoid(options,
               MujocoModel::load(options.model_file.empty() ? shipped_model(kModelFile) : options.model_file)) {}

Humanoid::Humanoid(const TaskOptions& options, std::shared_ptr<const MujocoModel> model)
    : MujocoEnv(
          [&] {
            model->require_sizes(kId, 17, 24, 23);
            const int dim = humanoid_observation_size(model->get(), options);
            return EnvSpec{kId, observation_space_of(dim), action_space_of(*model, kId), /*max_episode_steps=*/1000,
                           /*reward_threshold=*/std::nullopt};
          }(),
          model, options.frame_skip),
      options_(options) {
  report_locomotion_info(/*survive=*/true, /*contact=*/true, Positions::kXY);
  report_tendon_info();
}

bool Humanoid::is_healthy() const {
  const double z = data()->qpos[2];
  return options_.healthy_z_range.first < z && z < options_.healthy_z_range.second;
}

void Humanoid::reset_state(float* observation) {
  reset_with_noise(options_.reset_noise_scale, /*normal_velocity=*/false);
  compute_external_forces();
  write_humanoid_observation(model(), data(), options_, observation);
}

StepResult Humanoid::step_state(const Action& action, float* observation) {
  const std::optional<std::pair<double, double>> velocity =
      simulate_xy_velocity(action, [this] { return mass_center_xy(model(), data()); });
  compute_external_forces();
  write_humanoid_observation(model(), data(), options_, observation);
  if (!velocity) return diverged_step();
  const double contact_cost =
      std::min(std::max(options_.contact_cost_weight * external_force_square_sum(model(), data()),
                        options_.contact_cost_range.first),
               options_.contact_cost_range.second);
  return locomotion_step(options_, velocity->first, action, is_healthy(), contact_cost, velocity->second);
}

}  // namespace concord::envs::mujoco
