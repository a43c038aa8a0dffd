#pragma once

#include <memory>
#include <string>
#include <vector>

#include "concord/envs/mujoco/mujoco_env.h"
#include "concord/envs/mujoco/task_options.h"

namespace concord::envs::mujoco {

// The sparse half-cheetah of #Exploration (Tang et al. 2017, after VIME's rllab task): HalfCheetah-
// v5's body, actions, observation (17), reset and frame_skip, but a reward of 1 on each step that
// ends with the torso (qpos[0], the root's x) more than kGoalDistance = 5 m ahead of the origin
// and 0 otherwise: no velocity term and no control cost, so random actions, which wander about
// the start, almost never see a reward. Never terminates; 1000 steps (HalfCheetah's).
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

  TaskOptions options_;
};

}  // namespace concord::envs::mujoco
