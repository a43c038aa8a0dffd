#pragma once

#include <memory>
#include <string>
#include <vector>

#include "concord/envs/mujoco/mujoco_env.h"
#include "concord/envs/mujoco/task_options.h"

namespace concord::envs::mujoco {

// Swimmer-v5 (Gymnasium): a three-link swimmer in a viscous fluid (root x, y, yaw; two hinges)
// swims forward with two torques in [-1, 1] (gear 150). Observation: float32 [qpos[2:] (3),
// qvel (5)] (8; 10 with exclude_current_positions_from_observation = false). Reward:
// forward_reward_weight (1) x dx/dt - ctrl_cost_weight (1e-4) x sum(a^2). Never terminates;
// 1000 steps. Reset: qpos0 + U(-s, s), qvel U(-s, s), s = reset_noise_scale (0.1). frame_skip 4
// (dt 0.04), reward threshold 360.
class Swimmer final : public MujocoEnv {
 public:
  static constexpr const char* kId = "MuJoCo/Swimmer-v5";
  static constexpr const char* kModelFile = "swimmer.xml";

  explicit Swimmer(const TaskOptions& options = default_options());
  static TaskOptions default_options();
  static std::vector<std::string> option_names() {
    return {"forward_reward_weight", "ctrl_cost_weight", "reset_noise_scale",
            "exclude_current_positions_from_observation"};
  }

 private:
  Swimmer(const TaskOptions& options, std::shared_ptr<const MujocoModel> model);
  void reset_state(float* observation) override;
  StepResult step_state(const Action& action, float* observation) override;
  void write_observation(float* observation) const;

  TaskOptions options_;
};

}  // namespace concord::envs::mujoco
