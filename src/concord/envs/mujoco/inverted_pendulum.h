#pragma once

#include <memory>
#include <string>
#include <vector>

#include "concord/envs/mujoco/mujoco_env.h"
#include "concord/envs/mujoco/task_options.h"

namespace concord::envs::mujoco {

// InvertedPendulum-v5 (Gymnasium): keep a pole upright on a cart with a force in [-3, 3]
// (gear 100). Observation: float32 [qpos (cart x, pole angle), qvel] (4). Reward 1 on every step
// that does not terminate, 0 on the one that does; terminates when |pole angle| > 0.2 or the
// observation is not finite. Reset: qpos0 + U(-s, s), qvel U(-s, s), s = reset_noise_scale
// (0.01). frame_skip 2, 1000 steps, reward threshold 950.
class InvertedPendulum final : public MujocoEnv {
 public:
  static constexpr const char* kId = "MuJoCo/InvertedPendulum-v5";
  static constexpr const char* kModelFile = "inverted_pendulum.xml";
  static constexpr double kMaxAngle = 0.2;

  explicit InvertedPendulum(const TaskOptions& options = default_options());
  static TaskOptions default_options();
  static std::vector<std::string> option_names() { return {"reset_noise_scale"}; }

 private:
  InvertedPendulum(const TaskOptions& options, std::shared_ptr<const MujocoModel> model);
  void reset_state(float* observation) override;
  StepResult step_state(const Action& action, float* observation) override;
  bool write_observation(float* observation) const;

  TaskOptions options_;
};

}  // namespace concord::envs::mujoco
