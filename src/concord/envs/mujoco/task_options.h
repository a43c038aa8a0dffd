#pragma once

#include <string>
#include <utility>
#include <vector>

#include "concord/envs/registry.h"

namespace concord::envs::mujoco {

// A MuJoCo task's settings, resolved: Gymnasium v5's keyword arguments of the same names, each
// task's defaults filled in and the run's env.* keys laid over them. A task reads only the fields
// it names in its accepted list; every task also takes model_file and frame_skip.
struct TaskOptions {
  std::string model_file;    // the shipped model's path unless env.model_file names another
  std::string forward_body;  // MuJoCo/Custom-v0: the body whose forward velocity is rewarded
  int frame_skip = 1;
  double forward_reward_weight = 1.0;
  double ctrl_cost_weight = 0.0;
  double contact_cost_weight = 0.0;
  double healthy_reward = 0.0;
  std::pair<double, double> healthy_z_range{0.0, 0.0};
  std::pair<double, double> healthy_angle_range{0.0, 0.0};
  double reset_noise_scale = 0.0;
  double reward_dist_weight = 1.0;
  double reward_control_weight = 1.0;
  std::pair<double, double> contact_force_range{0.0, 0.0};
  std::pair<double, double> contact_cost_range{0.0, 0.0};
  bool include_cfrc_ext_in_observation = true;
  bool include_cinert_in_observation = true;
  bool include_cvel_in_observation = true;
  bool include_qfrc_actuator_in_observation = true;
  double uph_cost_weight = 1.0;
  double impact_cost_weight = 0.0;
  std::pair<double, double> impact_cost_range{0.0, 0.0};
  bool observe_sensors = false;
  bool exclude_current_positions_from_observation = true;
  bool terminate_when_unhealthy = true;
};

// `defaults` with the settings in `options` laid over them. Throws std::invalid_argument naming
// the key: for a setting outside `accepted` (bare names; model_file and frame_skip are always
// accepted), a frame_skip below 1, a negative or non-finite weight or noise scale, or a range
// whose low end is above its high end.
// "low,high" (numbers, inf and -inf allowed, spaces ignored) as a range. Throws
// std::invalid_argument naming `key` and the text when it is not two numbers.
std::pair<double, double> parse_range(const std::string& text, const std::string& key);

TaskOptions resolve_options(const std::string& id, const EnvOptions& options, TaskOptions defaults,
                            const std::vector<std::string>& accepted);

}  // namespace concord::envs::mujoco
