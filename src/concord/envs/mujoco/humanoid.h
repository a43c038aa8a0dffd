#pragma once

#include <memory>
#include <string>
#include <vector>

#include "concord/envs/mujoco/mujoco_env.h"
#include "concord/envs/mujoco/task_options.h"

namespace concord::envs::mujoco {

// Humanoid-v5 (Gymnasium): a 3D biped on a free joint (abdomen, hips, knees, shoulders, elbows)
// walks forward with 17 torques in [-0.4, 0.4]. Observation: float32 [qpos[2:] (22), qvel (23),
// cinert (13 x 10), cvel (13 x 6), qfrc_actuator[6:] (17), cfrc_ext (13 x 6)], the body rows
// without the world's (348; 350 with exclude_current_positions_from_observation = false).
// Reward: healthy_reward (5, only while healthy) + forward_reward_weight (1.25) x the centre of
// mass's dx/dt - ctrl_cost_weight (0.1) x sum(a^2) - clip(contact_cost_weight (5e-7) x
// sum(cfrc_ext^2), contact_cost_range (-inf, 10)). Healthy: the torso's z = qpos[2] in
// healthy_z_range (1, 2), open; unhealthy terminates when terminate_when_unhealthy (true). Reset:
// qpos0 + U(-s, s), qvel U(-s, s), s = reset_noise_scale (0.01). frame_skip 5 (dt 0.015), 1000
// steps, no reward threshold. include_cinert/cvel/qfrc_actuator/cfrc_ext_in_observation (all
// true) leave those blocks out of the observation when false, as Gymnasium's options do.
class Humanoid final : public MujocoEnv {
 public:
  static constexpr const char* kId = "MuJoCo/Humanoid-v5";
  static constexpr const char* kModelFile = "humanoid.xml";

  explicit Humanoid(const TaskOptions& options = default_options());
  static TaskOptions default_options();
  static std::vector<std::string> option_names() {
    return {"forward_reward_weight",
            "ctrl_cost_weight",
            "contact_cost_weight",
            "contact_cost_range",
            "healthy_reward",
            "terminate_when_unhealthy",
            "healthy_z_range",
            "reset_noise_scale",
            "exclude_current_positions_from_observation",
            "include_cinert_in_observation",
            "include_cvel_in_observation",
            "include_qfrc_actuator_in_observation",
            "include_cfrc_ext_in_observation"};
  }

  bool is_healthy() const;

 private:
  Humanoid(const TaskOptions& options, std::shared_ptr<const MujocoModel> model);
  void reset_state(float* observation) override;
  StepResult step_state(const Action& action, float* observation) override;

  TaskOptions options_;
};

}  // namespace concord::envs::mujoco
