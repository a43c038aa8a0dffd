#pragma once

#include <memory>
#include <string>
#include <vector>

#include "concord/envs/mujoco/mujoco_env.h"
#include "concord/envs/mujoco/task_options.h"

namespace concord::envs::mujoco {

// InvertedDoublePendulum-v5 (Gymnasium): balance two poles stacked on a cart with a force in
// [-1, 1] (gear 500). Observation: float32 [cart x, sin(hinges) (2), cos(hinges) (2),
// clip(qvel, -10, 10) (3), clip(qfrc_constraint[0], -10, 10)] (9). Reward, from the state after
// the step: healthy_reward (10, on steps that do not terminate) - 0.01 x^2 - (y - 2)^2 -
// 0.001 v1^2 - 0.005 v2^2, with (x, y) the site "tip"'s x and z and v1, v2 the hinges' velocities;
// terminates when y <= 1. Reset: qpos0 + U(-s, s), qvel s x N(0, 1), s = reset_noise_scale (0.1).
// frame_skip 5 (dt 0.05), 1000 steps, reward threshold 9100.
class InvertedDoublePendulum final : public MujocoEnv {
 public:
  static constexpr const char* kId = "MuJoCo/InvertedDoublePendulum-v5";
  static constexpr const char* kModelFile = "inverted_double_pendulum.xml";

  explicit InvertedDoublePendulum(const TaskOptions& options = default_options());
  static TaskOptions default_options();
  static std::vector<std::string> option_names() { return {"healthy_reward", "reset_noise_scale"}; }

 private:
  InvertedDoublePendulum(const TaskOptions& options, std::shared_ptr<const MujocoModel> model);
  void reset_state(float* observation) override;
  StepResult step_state(const Action& action, float* observation) override;
  void write_observation(float* observation) const;

  TaskOptions options_;
  int tip_ = 0;  // the site "tip"
};

}  // namespace concord::envs::mujoco
