#pragma once

#include <memory>
#include <string>
#include <vector>

#include "concord/envs/mujoco/mujoco_env.h"
#include "concord/envs/mujoco/task_options.h"

namespace concord::envs::mujoco {

// HumanoidStandup-v5 (Gymnasium): Humanoid-v5's body starts lying on its back and is rewarded
// for raising its torso, with the same 17 torques in [-0.4, 0.4] and the same observation (348).
// Reward: qpos[2] / the model's timestep (not dt: Gymnasium's own rule) - ctrl_cost_weight (0.1)
// x sum(a^2) - min(0.5e-6 x sum(cfrc_ext^2), 10) + 1. Never terminates; 1000 steps. Reset: qpos0
// + U(-s, s), qvel U(-s, s), s = reset_noise_scale (0.01). frame_skip 5 (dt 0.015).
class HumanoidStandup final : public MujocoEnv {
 public:
  static constexpr const char* kId = "MuJoCo/HumanoidStandup-v5";
  static constexpr const char* kModelFile = "humanoid_standup.xml";

  explicit HumanoidStandup(const TaskOptions& options = default_options());
  static TaskOptions default_options();
  static std::vector<std::string> option_names() {
    return {"ctrl_cost_weight", "reset_noise_scale", "exclude_current_positions_from_observation"};
  }

 private:
  HumanoidStandup(const TaskOptions& options, std::shared_ptr<const MujocoModel> model);
  void reset_state(float* observation) override;
  StepResult step_state(const Action& action, float* observation) override;

  TaskOptions options_;
};

}  // namespace concord::envs::mujoco
