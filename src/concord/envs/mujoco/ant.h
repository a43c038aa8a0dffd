#pragma once

#include <memory>
#include <string>
#include <vector>

#include "concord/envs/mujoco/mujoco_env.h"
#include "concord/envs/mujoco/task_options.h"

namespace concord::envs::mujoco {

// Ant-v5 (Gymnasium): a quadruped (a torso on a free joint, four legs of hip and ankle hinges)
// walks forward with eight torques in [-1, 1] (gear 150). Observation: float32 [qpos[2:] (13),
// qvel (14), cfrc_ext of every body but the world clipped to contact_force_range (-1, 1) (13 x
// 6)] (105; 27 with include_cfrc_ext_in_observation = false; 2 more with
// exclude_current_positions_from_observation = false). Reward: healthy_reward (1, only while
// healthy) + forward_reward_weight (1) x the torso's dx/dt (its body frame, Gymnasium's
// main_body) - ctrl_cost_weight (0.5) x sum(a^2) - contact_cost_weight (5e-4) x
// sum(clip(cfrc_ext)^2). Healthy: every qpos and qvel finite and the torso's z = qpos[2] in
// healthy_z_range [0.2, 1] (closed); unhealthy terminates when terminate_when_unhealthy (true).
// Reset: qpos0 + U(-s, s), qvel s x N(0, 1), s = reset_noise_scale (0.1). frame_skip 5 (dt 0.05),
// 1000 steps, reward threshold 6000.
class Ant final : public MujocoEnv {
 public:
  static constexpr const char* kId = "MuJoCo/Ant-v5";
  static constexpr const char* kModelFile = "ant.xml";

  explicit Ant(const TaskOptions& options = default_options());
  static TaskOptions default_options();
  static std::vector<std::string> option_names() {
    return {"forward_reward_weight",
            "ctrl_cost_weight",
            "contact_cost_weight",
            "healthy_reward",
            "terminate_when_unhealthy",
            "healthy_z_range",
            "contact_force_range",
            "reset_noise_scale",
            "exclude_current_positions_from_observation",
            "include_cfrc_ext_in_observation"};
  }

  // Gymnasium's is_healthy for the current state.
  bool is_healthy() const;

 private:
  Ant(const TaskOptions& options, std::shared_ptr<const MujocoModel> model);
  void reset_state(float* observation) override;
  StepResult step_state(const Action& action, float* observation) override;
  void write_observation(float* observation) const;
  double clipped_force(int index) const;

  TaskOptions options_;
  int torso_;
};

}  // namespace concord::envs::mujoco
