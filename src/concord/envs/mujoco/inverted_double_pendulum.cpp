#include "concord/envs/mujoco/inverted_double_pendulum.h"

#include <algorithm>
#include <cmath>

#include "concord/envs/mujoco/model_directory.h"

namespace concord::envs::mujoco {
namespace {

double clip10(double x) { return std::min(std::max(x, -10.0), 10.0); }

}  // namespace

TaskOptions InvertedDoublePendulum::default_options() {
  TaskOptions options;
  options.frame_skip = 5;
  options.healthy_reward = 10.0;
  options.reset_noise_scale = 0.1;
  return options;
}

InvertedDoublePendulum::InvertedDoublePendulum(const TaskOptions& options)
    : InvertedDoublePendulum(
          options, MujocoModel::load(options.model_file.empty() ? shipped_model(kModelFile) : options.model_file)) {}

InvertedDoublePendulum::InvertedDoublePendulum(const TaskOptions& options, std::shared_ptr<const MujocoModel> model)
    : MujocoEnv(
          [&] {
            model->require_sizes(kId, 1, 3, 3);
            return EnvSpec{kId, observation_space_of(9), action_space_of(*model, kId), /*max_episode_steps=*/1000,
                           /*reward_threshold=*/9100.0};
          }(),
          model, options.frame_skip),
      options_(options),
      tip_(model->require(mjOBJ_SITE, "tip", kId)) {
  report_info({{"reward_survive", &LocomotionReward::survive},
               {"distance_penalty", &LocomotionReward::distance_penalty},
               {"velocity_penalty", &LocomotionReward::velocity_penalty}});
}

void InvertedDoublePendulum::reset_state(float* observation) {
  reset_with_noise(options_.reset_noise_scale, /*normal_velocity=*/true);
  write_observation(observation);
}

StepResult InvertedDoublePendulum::step_state(const Action& action, float* observation) {
  const bool stable = simulate(action);
  write_observation(observation);
  if (!stable) return diverged_step();
  StepResult result;
  const mjData* d = data();
  const double x = d->site_xpos[3 * tip_];
  const double y = d->site_xpos[3 * tip_ + 2];
  const double v1 = d->qvel[1];
  const double v2 = d->qvel[2];
  result.terminated = y <= 1.0;
  const double dist_penalty = 0.01 * x * x + (y - 2) * (y - 2);
  const double vel_penalty = 1e-3 * v1 * v1 + 5e-3 * v2 * v2;
  const double alive_bonus = result.terminated ? 0.0 : options_.healthy_reward;
  result.reward = static_cast<float>(alive_bonus - dist_penalty - vel_penalty);
  step_terms().survive = alive_bonus;
  step_terms().distance_penalty = -dist_penalty;
  step_terms().velocity_penalty = -vel_penalty;
  return result;
}

void InvertedDoublePendulum::write_observation(float* observation) const {
  const mjData* d = data();
  observation[0] = static_cast<float>(d->qpos[0]);
  observation[1] = static_cast<float>(std::sin(d->qpos[1]));
  observation[2] = static_cast<float>(std::sin(d->qpos[2]));
  observation[3] = static_cast<float>(std::cos(d->qpos[1]));
  observation[4] = static_cast<float>(std::cos(d->qpos[2]));
  for (int i = 0; i < 3; ++i) observation[5 + i] = static_cast<float>(clip10(d->qvel[i]));
  observation[8] = static_cast<float>(clip10(d->qfrc_constraint[0]));
}

}  // namespace concord::envs::mujoco
