#include "concord/envs/mujoco/humanoid_standup.h"

#include <algorithm>
#include <limits>

#include "concord/envs/mujoco/humanoid_observation.h"
#include "concord/envs/mujoco/model_directory.h"

namespace concord::envs::mujoco {
TaskOptions HumanoidStandup::default_options() {
  TaskOptions options;
  options.frame_skip = 5;
  options.uph_cost_weight = 1.0;
  options.ctrl_cost_weight = 0.1;
  options.impact_cost_weight = 0.5e-6;
  options.impact_cost_range = {-std::numeric_limits<double>::infinity(), 10.0};
  options.reset_noise_scale = 1e-2;
  return options;
}

HumanoidStandup::HumanoidStandup(const TaskOptions& options)
    : HumanoidStandup(options,
                      MujocoModel::load(options.model_file.empty() ? shipped_model(kModelFile) : options.model_file)) {}

HumanoidStandup::HumanoidStandup(const TaskOptions& options, std::shared_ptr<const MujocoModel> model)
    : MujocoEnv(
          [&] {
            model->require_sizes(kId, 17, 24, 23);
            const int dim = humanoid_observation_size(model->get(), options);
            return EnvSpec{kId, observation_space_of(dim), action_space_of(*model, kId), /*max_episode_steps=*/1000,
                           /*reward_threshold=*/std::nullopt};
          }(),
          model, options.frame_skip),
      options_(options) {
  set_height_coordinate(2);
  report_info({{"x_position", &LocomotionReward::x_position, /*at_reset=*/true},
               {"y_position", &LocomotionReward::y_position, /*at_reset=*/true},
               {"z_distance_from_origin", &LocomotionReward::z_distance_from_origin, /*at_reset=*/true},
               {"reward_linup", &LocomotionReward::linup},
               {"reward_quadctrl", &LocomotionReward::ctrl},
               {"reward_impact", &LocomotionReward::contact}});
  report_tendon_info();
}

void HumanoidStandup::reset_state(float* observation) {
  reset_with_noise(options_.reset_noise_scale, /*normal_velocity=*/false);
  compute_external_forces();
  write_humanoid_observation(model(), data(), options_, observation);
}

StepResult HumanoidStandup::step_state(const Action& action, float* observation) {
  const bool stable = simulate(action);
  compute_external_forces();
  write_humanoid_observation(model(), data(), options_, observation);
  if (!stable) return diverged_step();
  StepResult result;
  const double uph = options_.uph_cost_weight * data()->qpos[2] / model()->opt.timestep;
  const double ctrl_cost = options_.ctrl_cost_weight * action_square_sum(action);
  const double impact_cost = std::min(std::max(options_.impact_cost_weight * external_force_square_sum(model(), data()),
                                               options_.impact_cost_range.first),
                                      options_.impact_cost_range.second);
  result.reward = static_cast<float>(uph - ctrl_cost - impact_cost + 1.0);
  step_terms().linup = uph;
  step_terms().ctrl = -ctrl_cost;
  step_terms().contact = -impact_cost;
  record_positions();
  return result;
}

}  // namespace concord::envs::mujoco
