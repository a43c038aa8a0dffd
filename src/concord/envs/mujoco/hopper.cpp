#include "concord/envs/mujoco/hopper.h"

#include <limits>

#include "concord/envs/mujoco/model_directory.h"

namespace concord::envs::mujoco {
namespace {

constexpr double kVelocityLimit = 10.0;
constexpr double kStateLimit = 100.0;  // Gymnasium's healthy_state_range (-100, 100)

}  // namespace

TaskOptions Hopper::default_options() {
  TaskOptions options;
  options.frame_skip = 4;
  options.forward_reward_weight = 1.0;
  options.ctrl_cost_weight = 1e-3;
  options.healthy_reward = 1.0;
  options.healthy_z_range = {0.7, std::numeric_limits<double>::infinity()};
  options.healthy_angle_range = {-0.2, 0.2};
  options.reset_noise_scale = 5e-3;
  return options;
}

Hopper::Hopper(const TaskOptions& options)
    : Hopper(options, MujocoModel::load(options.model_file.empty() ? shipped_model(kModelFile) : options.model_file)) {}

Hopper::Hopper(const TaskOptions& options, std::shared_ptr<const MujocoModel> model)
    : MujocoEnv(
          [&] {
            model->require_sizes(kId, 3, 6, 6);
            const int dim = options.exclude_current_positions_from_observation ? 11 : 12;
            return EnvSpec{kId, observation_space_of(dim), action_space_of(*model, kId), /*max_episode_steps=*/1000,
                           /*reward_threshold=*/3800.0};
          }(),
          model, options.frame_skip),
      options_(options) {
  report_locomotion_info(/*survive=*/true, /*contact=*/false, Positions::kXZ);
}

bool Hopper::is_healthy() const {
  const mjData* d = data();
  const mjModel* m = model();
  bool healthy_state = true;
  for (int i = 2; i < m->nq; ++i)
    healthy_state = healthy_state && -kStateLimit < d->qpos[i] && d->qpos[i] < kStateLimit;
  for (int i = 0; i < m->nv; ++i)
    healthy_state = healthy_state && -kStateLimit < d->qvel[i] && d->qvel[i] < kStateLimit;
  return healthy_state && inside_open(d->qpos[1], options_.healthy_z_range) &&
         inside_open(d->qpos[2], options_.healthy_angle_range);
}

void Hopper::reset_state(float* observation) {
  reset_with_noise(options_.reset_noise_scale, /*normal_velocity=*/false);
  write_observation(observation);
}

StepResult Hopper::step_state(const Action& action, float* observation) {
  const std::optional<double> x_velocity = simulate_x_velocity(action, [this] { return data()->qpos[0]; });
  write_observation(observation);
  if (!x_velocity) return diverged_step();
  return locomotion_step(options_, *x_velocity, action, is_healthy());
}

void Hopper::write_observation(float* observation) const {
  write_qpos_qvel(observation, options_.exclude_current_positions_from_observation ? 1 : 0, kVelocityLimit);
}

}  // namespace concord::envs::mujoco
