#include "concord/envs/mujoco/inverted_pendulum.h"

#include <cmath>

#include "concord/envs/mujoco/model_directory.h"

namespace concord::envs::mujoco {

TaskOptions InvertedPendulum::default_options() {
  TaskOptions options;
  options.frame_skip = 2;
  options.reset_noise_scale = 0.01;
  return options;
}

InvertedPendulum::InvertedPendulum(const TaskOptions& options)
    : InvertedPendulum(
          options, MujocoModel::load(options.model_file.empty() ? shipped_model(kModelFile) : options.model_file)) {}

InvertedPendulum::InvertedPendulum(const TaskOptions& options, std::shared_ptr<const MujocoModel> model)
    : MujocoEnv(
          [&] {
            model->require_sizes(kId, 1, 2, 2);
            return EnvSpec{kId, observation_space_of(4), action_space_of(*model, kId), /*max_episode_steps=*/1000,
                           /*reward_threshold=*/950.0};
          }(),
          model, options.frame_skip),
      options_(options) {
  report_info({{"reward_survive", &LocomotionReward::survive}});
}

void InvertedPendulum::reset_state(float* observation) {
  reset_with_noise(options_.reset_noise_scale, /*normal_velocity=*/false);
  write_observation(observation);
}

StepResult InvertedPendulum::step_state(const Action& action, float* observation) {
  const bool stable = simulate(action);
  const bool finite = write_observation(observation);
  StepResult result;
  result.terminated = !stable || !finite || std::abs(data()->qpos[1]) > kMaxAngle;
  result.reward = result.terminated ? 0.0f : 1.0f;
  step_terms().survive = result.reward;
  return result;
}

bool InvertedPendulum::write_observation(float* observation) const {
  const mjData* d = data();
  const double values[4] = {d->qpos[0], d->qpos[1], d->qvel[0], d->qvel[1]};
  bool finite = true;
  for (int i = 0; i < 4; ++i) {
    observation[i] = static_cast<float>(values[i]);
    finite = finite && std::isfinite(values[i]);
  }
  return finite;
}

}  // namespace concord::envs::mujoco
