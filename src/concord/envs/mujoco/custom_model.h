#pragma once

#include <memory>
#include <string>
#include <vector>

#include "concord/envs/mujoco/mujoco_env.h"
#include "concord/envs/mujoco/task_options.h"

namespace concord::envs::mujoco {

// MuJoCo/Custom-v0: a user's own MJCF model (env.model_file, required) as a locomotion task,
// without C++. Actions: its actuators, in their control ranges (each needs ctrllimited).
// Observation: float32 [qpos, qvel] (nq + nv), or with observe_sensors its sensors' readings
// (sensordata, in the model's order: the sensors it names are what it observes) at the state
// after the step (one mj_forward more per env step). Reward:
// forward_reward_weight (1) x the x velocity of env.forward_body (default: the first body under
// the world) - ctrl_cost_weight (0.1) x sum(a^2). Never terminates (physics that diverges ends
// the episode); 1000 steps. Reset: qpos0 + U(-s, s), qvel U(-s, s), s = reset_noise_scale (0.1).
// frame_skip 5.
class CustomModel final : public MujocoEnv {
 public:
  static constexpr const char* kId = "MuJoCo/Custom-v0";

  explicit CustomModel(const TaskOptions& options);
  static TaskOptions default_options();
  static std::vector<std::string> option_names() {
    return {"forward_body", "forward_reward_weight", "ctrl_cost_weight", "reset_noise_scale", "observe_sensors"};
  }

  int forward_body() const { return body_; }

 private:
  CustomModel(const TaskOptions& options, std::shared_ptr<const MujocoModel> model);
  void reset_state(float* observation) override;
  StepResult step_state(const Action& action, float* observation) override;
  void write_observation(float* observation) const;

  TaskOptions options_;
  int body_;
};

}  // namespace concord::envs::mujoco
