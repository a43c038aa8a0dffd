#include "concord/cli/unstable_physics.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "concord/envs/mujoco/mujoco_env.h"

namespace concord::cli {

UnstablePhysics::UnstablePhysics(const std::string& env_id)
    : active_(env_id.rfind("MuJoCo/", 0) == 0), start_(envs::mujoco::MujocoEnv::unstable_steps_in_process()) {}

int64_t UnstablePhysics::count() const { return envs::mujoco::MujocoEnv::unstable_steps_in_process() - start_; }

void UnstablePhysics::add_to(std::map<std::string, double>& metrics) const {
  if (active_) metrics["env/unstable_physics_steps"] = static_cast<double>(count());
}

void UnstablePhysics::warn_if_any(int64_t env_steps) const {
  const int64_t unstable = count();
  if (!active_ || unstable == 0) return;
  spdlog::warn(
      "the physics diverged on {} of {} env steps ({:.3g}%): each ended its episode with reward 0 "
      "(env/unstable_physics_steps in the metrics); a smaller env.frame_skip or a stiffer model helps",
      unstable, env_steps,
      100.0 * static_cast<double>(unstable) / static_cast<double>(std::max<int64_t>(env_steps, 1)));
}

}  // namespace concord::cli
