#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "concord/core/registry.h"
#include "concord/envs/env.h"

namespace concord::envs {

// Settings a run hands to its environments (config keys env.<name>). Unset means the
// environment's own default; an environment without such a setting refuses one that is set, so a
// misplaced key never goes silently unused.
struct EnvOptions {
  std::optional<double> sticky_action_probability;  // MinAtar: chance of repeating the last action
  std::optional<bool> difficulty_ramping;           // MinAtar: games speed up as they go on
  // Every env: episodes are truncated after this many steps, in place of the env's own limit
  // (Gymnasium's make(id, max_episode_steps=N)). Must be >= 1.
  std::optional<int> max_episode_steps;
  // Envs that call Python (EnvSpec::calls_interpreter): the longest one reset() or step() may take
  // before the run fails naming the env and this limit; unset means kDefaultStepTimeoutSeconds.
  // The built-in envs, which never wait on anything, refuse it.
  std::optional<double> step_timeout_seconds;
  // MuJoCo tasks (envs/mujoco/): Gymnasium v5's keyword arguments of the same names; unset means
  // the task's own value. model_file is an MJCF file in place of the shipped model; forward_body
  // names the body whose forward velocity a user's own model is rewarded for.
  std::optional<std::string> model_file;
  std::optional<std::string> forward_body;
  std::optional<int> frame_skip;
  std::optional<double> forward_reward_weight;
  std::optional<double> ctrl_cost_weight;
  std::optional<double> contact_cost_weight;
  std::optional<double> healthy_reward;
  std::optional<std::pair<double, double>> healthy_z_range;
  std::optional<std::pair<double, double>> healthy_angle_range;
  std::optional<double> reset_noise_scale;
  std::optional<double> reward_dist_weight;
  std::optional<double> reward_control_weight;
  std::optional<std::pair<double, double>> contact_force_range;
  std::optional<std::pair<double, double>> contact_cost_range;
  std::optional<bool> include_cfrc_ext_in_observation;
  std::optional<bool> include_cinert_in_observation;           // Humanoid, HumanoidStandup
  std::optional<bool> include_cvel_in_observation;             // Humanoid, HumanoidStandup
  std::optional<bool> include_qfrc_actuator_in_observation;    // Humanoid, HumanoidStandup
  std::optional<double> uph_cost_weight;                       // HumanoidStandup
  std::optional<double> impact_cost_weight;                    // HumanoidStandup
  std::optional<std::pair<double, double>> impact_cost_range;  // HumanoidStandup
  std::optional<bool> observe_sensors;  // MuJoCo/Custom-v0: the model's sensors in place of qpos, qvel
  std::optional<bool> exclude_current_positions_from_observation;
  std::optional<bool> terminate_when_unhealthy;

  // The config keys of the settings that are set, e.g. {"env.difficulty_ramping"}.
  std::vector<std::string> set_keys() const;
  // Throws std::invalid_argument naming the first set key outside `accepted` (bare names, e.g.
  // "difficulty_ramping") and the env id that has no such setting. max_episode_steps, which every
  // env takes, is never refused.
  void refuse_others(const std::string& env_id, const std::vector<std::string>& accepted) const;
};

// env.step_timeout_seconds's default.
inline constexpr double kDefaultStepTimeoutSeconds = 60.0;

using EnvFactory = std::function<std::unique_ptr<Env>(const EnvOptions&)>;

// Environments by id ("CartPole-v1", ...). The built-in environments are listed in registry.cpp,
// one line each; programs may add their own with add().
class Registry {
 public:
  // The process-wide registry, holding the built-in environments.
  static Registry& global();

  // An environment without settings: made by `make`, it refuses every option that is set.
  // Throws std::invalid_argument if the id is already registered.
  void add(const std::string& id, std::function<std::unique_ptr<Env>()> make);
  // An environment that reads options: `factory` validates them (std::invalid_argument naming
  // the key and value) and refuses the ones it has no use for (EnvOptions::refuse_others).
  void add_configurable(const std::string& id, EnvFactory factory) { factories_.add(id, std::move(factory)); }
  bool contains(const std::string& id) const { return factories_.contains(id); }
  // Throws std::invalid_argument naming the id and listing the known ones when it is unknown, and
  // the factory's own std::invalid_argument for options the env refuses.
  std::unique_ptr<Env> make(const std::string& id, const EnvOptions& options = {}) const;
  // In registration order.
  std::vector<std::string> ids() const { return factories_.names(); }

 private:
  core::Registry<EnvFactory> factories_{"environment"};
};

// Shorthand for Registry::global().make(id, options).
std::unique_ptr<Env> make_env(const std::string& id, const EnvOptions& options = {});

}  // namespace concord::envs
