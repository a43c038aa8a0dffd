#pragma once

#include <memory>
#include <string>
#include <vector>

#include "concord/envs/mujoco/mujoco_env.h"
#include "concord/envs/mujoco/task_options.h"

namespace concord::envs::mujoco {

// HumanoidStandup-v5 (Gymnasium): Humanoid-v5's body starts lying on its back and is rewarded
// for raising its torso, with the same 17 torques in [-0.4, 0.4] and the same observation (348).
// Reward: uph_cost_weight (1) x qpos[2] / the model's timestep (not dt: Gymnasium's own rule) -
// ctrl_cost_weight (0.1) x sum(a^2) - clip(impact_cost_weight (0.5e-6) x sum(cfrc_ext^2),
// impact_cost_range (-inf, 10)) + 1. Never terminates; 1000 steps. Reset: qpos0 + U(-s, s), qvel
// U(-s, s), s = reset_noise_scale (0.01). frame_skip 5 (dt 0.015). The include_*_in_observation
// options leave blocks out of the observation, as Humanoid's.
class HumanoidStandup final : public MujocoEnv {
 public:
  static constexpr const char* kId = "MuJoCo/HumanoidStandup-v5";
  static constexpr const char* kModelFile = "humanoid_standup.xml";

  explicit HumanoidStandup(const TaskOptions& options = default_options());
  static TaskOptions default_options();
  static std::vector<std::string> option_names() {
    return {"uph_cost_weight",
            "ctrl_cost_weight",
            "impact_cost_weight",
            "impact_cost_range",
            "reset_noise_scale",
            "exclude_current_positions_from_observation",
            "include_cinert_in_observation",
            "include_cvel_in_observation",
            "include_qfrc_actuator_in_observation",
            "include_cfrc_ext_in_observation"};
  }

 private:
  HumanoidStandup(const TaskOptions& options, std::shared_ptr<const MujocoModel> model);
  void reset_state(float* observation) override;
  StepResult step_state(const Action& action, float* observation) override;

  TaskOptions options_;
};

}  // namespace concord::envs::mujoco
