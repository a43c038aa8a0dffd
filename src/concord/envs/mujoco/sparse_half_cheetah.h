#pragma once

#include <memory>
#include <string>
#include <vector>

#include "concord/envs/mujoco/mujoco_env.h"
#include "concord/envs/mujoco/task_options.h"

namespace concord::envs::mujoco {

// The sparse half-cheetah of #Exploration (Tang et al. 2017), which took it from VIME (Houthooft
// et al. 2016): HalfCheetah-v5's body, actions, observation (17), reset and frame_skip, but a
// reward of 1 on each step that ends with the robot's centre of mass more than kGoalDistance = 5
// m ahead (x) of the origin, and 0 otherwise: no velocity term and no control cost, so random
// actions, which wander about the start, almost never see a reward. The rule is VIME's code's
// (openai/vime, envs/half_cheetah_env_x.py: `com_subtree` of the torso, the root of every other
// body, recomputed after the step's physics, `> 5.0`, forward only); before 2026-12-07 this env
// tested the root joint's x (qpos[0]) instead, which sits apart from the centre of mass. VIME's
// observation also held the centre of mass; here set exclude_current_positions_from_observation
// = false to observe the root's x. Never terminates; 1000 steps (HalfCheetah's).
class SparseHalfCheetah final : public MujocoEnv {
 public:
  static constexpr const char* kId = "MuJoCo/SparseHalfCheetah-v0";
  static constexpr const char* kModelFile = "half_cheetah.xml";
  static constexpr double kGoalDistance = 5.0;

  explicit SparseHalfCheetah(const TaskOptions& options = default_options());
  static TaskOptions default_options();
  static std::vector<std::string> option_names() {
    return {"reset_noise_scale", "exclude_current_positions_from_observation"};
  }

 private:
  SparseHalfCheetah(const TaskOptions& options, std::shared_ptr<const MujocoModel> model);
  void reset_state(float* observation) override;
  StepResult step_state(const Action& action, float* observation) override;
  void write_observation(float* observation) const;
  // The x of the centre of mass of every body, at the current qpos (runs mj_kinematics).
  double mass_center_x_now();

  TaskOptions options_;
};

}  // namespace concord::envs::mujoco
