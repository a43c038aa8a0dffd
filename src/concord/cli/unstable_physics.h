#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace concord::cli {

// The MuJoCo physics steps that diverged during a run (NaN, infinite or huge state: the env ended
// the episode with reward 0, envs/mujoco/mujoco_env.h), as the metric env/unstable_physics_steps
// and one warning at the end. It reads the count of the process that steps the envs, so a policy
// whose actors are other processes (actor_processes, seed_rl, apex with processes) reports 0 for
// theirs. For other envs it does nothing, so their metrics keep their columns.
class UnstablePhysics {
 public:
  explicit UnstablePhysics(const std::string& env_id);

  bool active() const { return active_; }
  // Steps that diverged since this object was made.
  int64_t count() const;
  // Adds env/unstable_physics_steps to `metrics` when active.
  void add_to(std::map<std::string, double>& metrics) const;
  // A warning with the count and the share of `env_steps` when any step diverged.
  void warn_if_any(int64_t env_steps) const;

 private:
  bool active_;
  int64_t start_;
};

}  // namespace concord::cli
