#pragma once

#include <memory>
#include <string>
#include <vector>

#include "concord/envs/mujoco/mujoco_env.h"
#include "concord/envs/mujoco/task_options.h"

namespace concord::envs::mujoco {

// HalfCheetah-v5 (Gymnasium): a planar cheetah (root x, z, pitch and six hinges: back and front
// thigh, shin, foot) runs forward with six torques in [-1, 1]. Observation: float32 [qpos[1:] (8),
// qvel (9)] (17; 18 with exclude_current_positions_from_observation = false). Reward:
// forward_reward_weight (1) x dx/dt - ctrl_cost_weight (0.1) x sum(a^2), dx/dt of qpos[0] over
// dt = 0.01 x frame_skip (5). Never terminates; 1000 steps. Reset: qpos0 + U(-s, s),
// qvel s x N(0, 1), s = reset_noise_scale (0.1). Reward threshold 4800.
class HalfCheetah final : public MujocoEnv {
 public:
  static constexpr const char* kId = "MuJoCo/HalfCheetah-v5";
  static constexpr const char* kModelFile = "half_cheetah.xml";

  explicit HalfCheetah(const TaskOptions& options = default_options());
  static TaskOptions default_options();
  static std::vector<std::string> option_names() {
    return {"forward_reward_weight", "ctrl_cost_weight", "reset_noise_scale",
            "exclude_current_positions_from_observation"};
  }

 private:
  HalfCheetah(const TaskOptions& options, std::shared_ptr<const MujocoModel> model);
  void reset_state(float* observation) override;
  StepResult step_state(const Action& action, float* observation) override;
  void write_observation(float* observation) const;

  TaskOptions options_;
};

}  // namespace concord::envs::mujoco
