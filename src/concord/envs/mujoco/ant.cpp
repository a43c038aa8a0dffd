#include "concord/envs/mujoco/ant.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <utility>

#include "concord/envs/mujoco/model_directory.h"

namespace concord::envs::mujoco {

TaskOptions Ant::default_options() {
  TaskOptions options;
  options.frame_skip = 5;
  options.forward_reward_weight = 1.0;
  options.ctrl_cost_weight = 0.5;
  options.contact_cost_weight = 5e-4;
  options.healthy_reward = 1.0;
  options.healthy_z_range = {0.2, 1.0};
  options.contact_force_range = {-1.0, 1.0};
  options.reset_noise_scale = 0.1;
  return options;
}

Ant::Ant(const TaskOptions& options)
    : Ant(options, MujocoModel::load(options.model_file.empty() ? shipped_model(kModelFile) : options.model_file)) {}

Ant::Ant(const TaskOptions& options, std::shared_ptr<const MujocoModel> model)
    : MujocoEnv(
          [&] {
            model->require_sizes(kId, 8, 15, 14);
            const int bodies = model->get()->nbody - 1;
            const int dim = 27 + (options.exclude_current_positions_from_observation ? 0 : 2) +
                            (options.include_cfrc_ext_in_observation ? 6 * bodies : 0);
            return EnvSpec{kId, observation_space_of(dim), action_space_of(*model, kId), /*max_episode_steps=*/1000,
                           /*reward_threshold=*/6000.0};
          }(),
          model, options.frame_skip),
      options_(options),
      torso_(model->require(mjOBJ_BODY, "torso", kId)) {
  report_locomotion_info(/*survive=*/true, /*contact=*/true, Positions::kXY);
}

bool Ant::is_healthy() const {
  const mjData* d = data();
  const mjModel* m = model();
  bool finite = true;
  for (int i = 0; i < m->nq; ++i) finite = finite && std::isfinite(d->qpos[i]);
  for (int i = 0; i < m->nv; ++i) finite = finite && std::isfinite(d->qvel[i]);
  return finite && options_.healthy_z_range.first <= d->qpos[2] && d->qpos[2] <= options_.healthy_z_range.second;
}

double Ant::clipped_force(int index) const {
  return std::min(std::max(data()->cfrc_ext[index], options_.contact_force_range.first),
                  options_.contact_force_range.second);
}

void Ant::reset_state(float* observation) {
  reset_with_noise(options_.reset_noise_scale, /*normal_velocity=*/true);
  compute_external_forces();
  write_observation(observation);
}

StepResult Ant::step_state(const Action& action, float* observation) {
  const std::optional<std::pair<double, double>> velocity = simulate_xy_velocity(
      action, [this] { return std::make_pair(data()->xpos[3 * torso_], data()->xpos[3 * torso_ + 1]); });
  compute_external_forces();
  write_observation(observation);
  if (!velocity) return diverged_step();
  double contact = 0.0;
  for (int i = 0; i < 6 * model()->nbody; ++i) contact += clipped_force(i) * clipped_force(i);
  return locomotion_step(options_, velocity->first, action, is_healthy(), options_.contact_cost_weight * contact,
                         velocity->second);
}

void Ant::write_observation(float* observation) const {
  int k = write_qpos_qvel(observation, options_.exclude_current_positions_from_observation ? 2 : 0,
                          std::numeric_limits<double>::infinity());
  if (options_.include_cfrc_ext_in_observation) {
    for (int i = 6; i < 6 * model()->nbody; ++i) observation[k++] = static_cast<float>(clipped_force(i));
  }
}

}  // namespace concord::envs::mujoco
