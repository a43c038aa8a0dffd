#include "concord/envs/mujoco/reacher.h"

#include <cmath>

#include "concord/envs/mujoco/model_directory.h"

namespace concord::envs::mujoco {

TaskOptions Reacher::default_options() {
  TaskOptions options;
  options.frame_skip = 2;
  options.reward_dist_weight = 1.0;
  options.reward_control_weight = 1.0;
  return options;
}

Reacher::Reacher(const TaskOptions& options)
    : Reacher(options, MujocoModel::load(options.model_file.empty() ? shipped_model(kModelFile) : options.model_file)) {
}

Reacher::Reacher(const TaskOptions& options, std::shared_ptr<const MujocoModel> model)
    : MujocoEnv(
          [&] {
            model->require_sizes(kId, 2, 4, 4);
            return EnvSpec{kId, observation_space_of(10), action_space_of(*model, kId), /*max_episode_steps=*/50,
                           /*reward_threshold=*/-3.75};
          }(),
          model, options.frame_skip),
      options_(options),
      fingertip_(model->require(mjOBJ_BODY, "fingertip", kId)),
      target_(model->require(mjOBJ_BODY, "target", kId)) {
  report_info({{"reward_dist", &LocomotionReward::dist}, {"reward_ctrl", &LocomotionReward::ctrl}});
}

void Reacher::reset_state(float* observation) {
  // Gymnasium's draws, in its order: the qpos noise, the goal (by rejection), the qvel noise.
  const mjModel* m = model();
  mjData* d = data();
  reset_data();
  for (int i = 0; i < m->nq; ++i) d->qpos[i] = m->qpos0[i] + uniform(-0.1, 0.1);
  double goal_x = 0.0, goal_y = 0.0;
  do {
    goal_x = uniform(-0.2, 0.2);
    goal_y = uniform(-0.2, 0.2);
  } while (std::sqrt(goal_x * goal_x + goal_y * goal_y) >= 0.2);
  d->qpos[2] = goal_x;
  d->qpos[3] = goal_y;
  for (int i = 0; i < m->nv; ++i) d->qvel[i] = uniform(-0.005, 0.005);
  d->qvel[2] = d->qvel[3] = 0.0;
  forward();
  write_observation(observation);
}

StepResult Reacher::step_state(const Action& action, float* observation) {
  const bool stable = simulate(action);
  write_observation(observation);
  if (!stable) return diverged_step();
  StepResult result;
  const mjData* d = data();
  const double dx = d->xpos[3 * fingertip_] - d->xpos[3 * target_];
  const double dy = d->xpos[3 * fingertip_ + 1] - d->xpos[3 * target_ + 1];
  const double dz = d->xpos[3 * fingertip_ + 2] - d->xpos[3 * target_ + 2];
  const double reward_dist = -std::sqrt(dx * dx + dy * dy + dz * dz) * options_.reward_dist_weight;
  const double reward_ctrl = -action_square_sum(action) * options_.reward_control_weight;
  result.reward = static_cast<float>(reward_dist + reward_ctrl);
  step_terms().dist = reward_dist;
  step_terms().ctrl = reward_ctrl;
  return result;
}

void Reacher::write_observation(float* observation) const {
  const mjData* d = data();
  observation[0] = static_cast<float>(std::cos(d->qpos[0]));
  observation[1] = static_cast<float>(std::cos(d->qpos[1]));
  observation[2] = static_cast<float>(std::sin(d->qpos[0]));
  observation[3] = static_cast<float>(std::sin(d->qpos[1]));
  observation[4] = static_cast<float>(d->qpos[2]);
  observation[5] = static_cast<float>(d->qpos[3]);
  observation[6] = static_cast<float>(d->qvel[0]);
  observation[7] = static_cast<float>(d->qvel[1]);
  observation[8] = static_cast<float>(d->xpos[3 * fingertip_] - d->xpos[3 * target_]);
  observation[9] = static_cast<float>(d->xpos[3 * fingertip_ + 1] - d->xpos[3 * target_ + 1]);
}

}  // namespace concord::envs::mujoco
