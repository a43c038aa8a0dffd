#include "concord/envs/mujoco/custom_model.h"

#include <limits>
#include <stdexcept>

namespace concord::envs::mujoco {
namespace {

std::shared_ptr<const MujocoModel> user_model(const TaskOptions& options) {
  if (options.model_file.empty()) {
    throw std::invalid_argument(std::string(CustomModel::kId) +
                                ": env.model_file is required (the MJCF file of your model, with actuators)");
  }
  return MujocoModel::load(options.model_file);
}

}  // namespace

TaskOptions CustomModel::default_options() {
  TaskOptions options;
  options.frame_skip = 5;
  options.forward_reward_weight = 1.0;
  options.ctrl_cost_weight = 0.1;
  options.reset_noise_scale = 0.1;
  return options;
}

CustomModel::CustomModel(const TaskOptions& options) : CustomModel(options, user_model(options)) {}

CustomModel::CustomModel(const TaskOptions& options, std::shared_ptr<const MujocoModel> model)
    : MujocoEnv(
          [&] {
            const mjModel* m = model->get();
            if (m->nu < 1) {
              throw std::invalid_argument(std::string(kId) + ": model file '" + model->path() +
                                          "' has no actuators, so there is nothing to act with");
            }
            if (m->nbody < 2) {
              throw std::invalid_argument(std::string(kId) + ": model file '" + model->path() +
                                          "' has no body besides the world");
            }
            if (options.observe_sensors && m->nsensordata == 0) {
              throw std::invalid_argument(std::string(kId) + ": env.observe_sensors is set, but model file '" +
                                          model->path() + "' has no sensors");
            }
            const int dim = options.observe_sensors ? m->nsensordata : m->nq + m->nv;
            return EnvSpec{kId, observation_space_of(dim), action_space_of(*model, kId),
                           /*max_episode_steps=*/1000,
                           /*reward_threshold=*/std::nullopt};
          }(),
          model, options.frame_skip),
      options_(options),
      body_(options.forward_body.empty() ? 1 : model->require(mjOBJ_BODY, options.forward_body, kId)) {
  report_locomotion_info(/*survive=*/false, /*contact=*/false, Positions::kNone);
}

void CustomModel::reset_state(float* observation) {
  reset_with_noise(options_.reset_noise_scale, /*normal_velocity=*/false);
  write_observation(observation);
}

StepResult CustomModel::step_state(const Action& action, float* observation) {
  const double x_before = data()->xpos[3 * body_];
  const bool stable = simulate(action);
  // mj_step leaves the sensor readings (and positions) of the state before its last integration:
  // recompute them at the state the observation describes.
  if (options_.observe_sensors) forward();
  const double x_velocity = (data()->xpos[3 * body_] - x_before) / dt();
  write_observation(observation);
  if (!stable) return diverged_step();
  return locomotion_step(options_, x_velocity, action, /*healthy=*/true);
}

void CustomModel::write_observation(float* observation) const {
  if (options_.observe_sensors) {
    for (int i = 0; i < model()->nsensordata; ++i) observation[i] = static_cast<float>(data()->sensordata[i]);
    return;
  }
  write_qpos_qvel(observation, 0, std::numeric_limits<double>::infinity());
}

}  // namespace concord::envs::mujoco
