#pragma once

#include <memory>
#include <string>
#include <vector>

#include "concord/envs/mujoco/mujoco_env.h"
#include "concord/envs/mujoco/task_options.h"

namespace concord::envs::mujoco {

// Reacher-v5 (Gymnasium): a two-link planar arm (hinges joint0, joint1) moves its fingertip to a
// target on two slide joints, with two torques in [-1, 1] (gear 200). Observation: float32
// [cos(qpos[0:2]) (2), sin(qpos[0:2]) (2), qpos[2:4] (the target, 2), qvel[0:2] (2),
// (fingertip - target)[x, y] (2)] (10), the bodies' positions after the step. Reward, after the
// step: -reward_dist_weight (1) x |fingertip - target| - reward_control_weight (1) x sum(a^2).
// Never terminates; 50 steps, reward threshold -3.75. Reset: qpos0 + U(-0.1, 0.1), then the
// target drawn U(-0.2, 0.2) per axis until it lies inside the disc of radius 0.2; arm velocities
// U(-0.005, 0.005), target velocities 0. frame_skip 2 (dt 0.02).
class Reacher final : public MujocoEnv {
 public:
  static constexpr const char* kId = "MuJoCo/Reacher-v5";
  static constexpr const char* kModelFile = "reacher.xml";

  explicit Reacher(const TaskOptions& options = default_options());
  static TaskOptions default_options();
  static std::vector<std::string> option_names() { return {"reward_dist_weight", "reward_control_weight"}; }

 private:
  Reacher(const TaskOptions& options, std::shared_ptr<const MujocoModel> model);
  void reset_state(float* observation) override;
  StepResult step_state(const Action& action, float* observation) override;
  void write_observation(float* observation) const;

  TaskOptions options_;
  int fingertip_;
  int target_;
};

}  // namespace concord::envs::mujoco
