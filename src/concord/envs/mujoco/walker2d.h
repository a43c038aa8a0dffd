#pragma once

#include <memory>
#include <string>
#include <vector>

#include "concord/envs/mujoco/mujoco_env.h"
#include "concord/envs/mujoco/task_options.h"

namespace concord::envs::mujoco {

// Walker2d-v5 (Gymnasium): a planar biped (root x, z, pitch; right and left thigh, leg, foot
// hinges) walks forward with six torques in [-1, 1] (gear 100). Observation: float32 [qpos[1:] (8),
// clip(qvel, -10, 10) (9)] (17; 18 with exclude_current_positions_from_observation = false).
// Reward: healthy_reward (1, only while healthy) + forward_reward_weight (1) x dx/dt -
// ctrl_cost_weight (0.001) x sum(a^2). Healthy: z = qpos[1] in healthy_z_range (0.8, 2) and
// pitch = qpos[2] in healthy_angle_range (-1, 1), open intervals; unhealthy terminates when
// terminate_when_unhealthy (true). Reset: qpos0 + U(-s, s), qvel U(-s, s), s = reset_noise_scale
// (0.005). frame_skip 4 (dt 0.008), 1000 steps, no reward threshold.
class Walker2d final : public MujocoEnv {
 public:
  static constexpr const char* kId = "MuJoCo/Walker2d-v5";
  static constexpr const char* kModelFile = "walker2d.xml";

  explicit Walker2d(const TaskOptions& options = default_options());
  static TaskOptions default_options();
  static std::vector<std::string> option_names() {
    return {"forward_reward_weight", "ctrl_cost_weight",
            "healthy_reward",        "terminate_when_unhealthy",
            "healthy_z_range",       "healthy_angle_range",
            "reset_noise_scale",     "exclude_current_positions_from_observation"};
  }

  // Gymnasium's is_healthy for the current state.
  bool is_healthy() const;

 private:
  Walker2d(const TaskOptions& options, std::shared_ptr<const MujocoModel> model);
  void reset_state(float* observation) override;
  StepResult step_state(const Action& action, float* observation) override;
  void write_observation(float* observation) const;

  TaskOptions options_;
};

}  // namespace concord::envs::mujoco
