#include "concord/envs/registry.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "concord/envs/classic_control/acrobot.h"
#include "concord/envs/classic_control/cartpole.h"
#include "concord/envs/classic_control/mountain_car.h"
#include "concord/envs/classic_control/mountain_car_continuous.h"
#include "concord/envs/classic_control/pendulum.h"
#include "concord/envs/exploration/cartpole_swing_up.h"
#include "concord/envs/exploration/deep_sea.h"
#include "concord/envs/exploration/sparse_mountain_car.h"
#include "concord/envs/masked_observation.h"
#include "concord/envs/memory/memory_length.h"
#include "concord/envs/minatar/asterix.h"
#include "concord/envs/minatar/breakout.h"
#include "concord/envs/minatar/freeway.h"
#include "concord/envs/minatar/seaquest.h"
#include "concord/envs/minatar/space_invaders.h"
#include "concord/envs/mujoco/ant.h"
#include "concord/envs/mujoco/custom_model.h"
#include "concord/envs/mujoco/half_cheetah.h"
#include "concord/envs/mujoco/hopper.h"
#include "concord/envs/mujoco/humanoid.h"
#include "concord/envs/mujoco/humanoid_standup.h"
#include "concord/envs/mujoco/inverted_double_pendulum.h"
#include "concord/envs/mujoco/inverted_pendulum.h"
#include "concord/envs/mujoco/reacher.h"
#include "concord/envs/mujoco/sparse_half_cheetah.h"
#include "concord/envs/mujoco/swimmer.h"
#include "concord/envs/mujoco/walker2d.h"

namespace concord::envs {
namespace {

template <typename EnvType>
std::unique_ptr<Env> make() {
  return std::make_unique<EnvType>();
}

// A MinAtar game in both action sets: "MinAtar/<Game>-v0" (all six actions) and "-v1" (minimal).
template <typename Game>
void add_minatar(Registry& registry, const std::string& game) {
  for (const bool minimal : {false, true}) {
    const std::string id = minatar::MinAtarGame::id_for(game, minimal);
    registry.add_configurable(id, [id, minimal](const EnvOptions& options) {
      options.refuse_others(id, {"sticky_action_probability", "difficulty_ramping"});
      minatar::MinAtarOptions game_options;
      game_options.sticky_action_probability =
          options.sticky_action_probability.value_or(game_options.sticky_action_probability);
      game_options.difficulty_ramping = options.difficulty_ramping.value_or(game_options.difficulty_ramping);
      game_options.minimal_action_set = minimal;
      return std::make_unique<Game>(game_options);
    });
  }
}

// A MuJoCo task, "MuJoCo/<Task>-v5": its env.* settings over the task's defaults (task_options.h).
template <typename Task>
void add_mujoco(Registry& registry) {
  registry.add_configurable(Task::kId, [](const EnvOptions& options) {
    return std::make_unique<Task>(
        mujoco::resolve_options(Task::kId, options, Task::default_options(), Task::option_names()));
  });
}

Registry make_builtin_registry() {
  Registry registry;
  // One line per built-in environment; see docs/adding-an-environment.md.
  registry.add("CartPole-v1", make<CartPole>);
  registry.add("Acrobot-v1", make<Acrobot>);
  registry.add("MountainCar-v0", make<MountainCar>);
  registry.add("MountainCarContinuous-v0", make<MountainCarContinuous>);
  registry.add("Pendulum-v1", make<Pendulum>);
  registry.add("CartPoleNoVel-v1", MaskedObservation::cartpole_no_velocity);
  registry.add("PendulumNoVel-v1", MaskedObservation::pendulum_no_velocity);
  for (const int length : MemoryLength::bsuite_lengths())
    registry.add(MemoryLength::id_for(length), [length] { return std::make_unique<MemoryLength>(length); });
  registry.add("SparseMountainCar-v0", make<SparseMountainCar>);
  registry.add("CartPoleSwingUp-v0", make<CartPoleSwingUp>);
  for (int size = 5; size <= 50; size += 5)
    registry.add(DeepSea::id_for(size), [size] { return std::make_unique<DeepSea>(size); });
  add_minatar<minatar::Asterix>(registry, "Asterix");
  add_minatar<minatar::Breakout>(registry, "Breakout");
  add_minatar<minatar::Freeway>(registry, "Freeway");
  add_minatar<minatar::Seaquest>(registry, "Seaquest");
  add_minatar<minatar::SpaceInvaders>(registry, "SpaceInvaders");
  add_mujoco<mujoco::InvertedPendulum>(registry);
  add_mujoco<mujoco::HalfCheetah>(registry);
  add_mujoco<mujoco::Hopper>(registry);
  add_mujoco<mujoco::Walker2d>(registry);
  add_mujoco<mujoco::Swimmer>(registry);
  add_mujoco<mujoco::InvertedDoublePendulum>(registry);
  add_mujoco<mujoco::Reacher>(registry);
  add_mujoco<mujoco::Ant>(registry);
  add_mujoco<mujoco::Humanoid>(registry);
  add_mujoco<mujoco::HumanoidStandup>(registry);
  add_mujoco<mujoco::SparseHalfCheetah>(registry);
  add_mujoco<mujoco::CustomModel>(registry);
  return registry;
}

}  // namespace

std::vector<std::string> EnvOptions::set_keys() const {
  std::vector<std::string> keys;
  if (sticky_action_probability) keys.push_back("env.sticky_action_probability");
  if (difficulty_ramping) keys.push_back("env.difficulty_ramping");
  if (max_episode_steps) keys.push_back("env.max_episode_steps");
  if (step_timeout_seconds) keys.push_back("env.step_timeout_seconds");
  if (model_file) keys.push_back("env.model_file");
  if (forward_body) keys.push_back("env.forward_body");
  if (frame_skip) keys.push_back("env.frame_skip");
  if (forward_reward_weight) keys.push_back("env.forward_reward_weight");
  if (ctrl_cost_weight) keys.push_back("env.ctrl_cost_weight");
  if (contact_cost_weight) keys.push_back("env.contact_cost_weight");
  if (healthy_reward) keys.push_back("env.healthy_reward");
  if (healthy_z_range) keys.push_back("env.healthy_z_range");
  if (healthy_angle_range) keys.push_back("env.healthy_angle_range");
  if (reset_noise_scale) keys.push_back("env.reset_noise_scale");
  if (reward_dist_weight) keys.push_back("env.reward_dist_weight");
  if (reward_control_weight) keys.push_back("env.reward_control_weight");
  if (contact_force_range) keys.push_back("env.contact_force_range");
  if (contact_cost_range) keys.push_back("env.contact_cost_range");
  if (include_cfrc_ext_in_observation) keys.push_back("env.include_cfrc_ext_in_observation");
  if (include_cinert_in_observation) keys.push_back("env.include_cinert_in_observation");
  if (include_cvel_in_observation) keys.push_back("env.include_cvel_in_observation");
  if (include_qfrc_actuator_in_observation) keys.push_back("env.include_qfrc_actuator_in_observation");
  if (uph_cost_weight) keys.push_back("env.uph_cost_weight");
  if (impact_cost_weight) keys.push_back("env.impact_cost_weight");
  if (impact_cost_range) keys.push_back("env.impact_cost_range");
  if (observe_sensors) keys.push_back("env.observe_sensors");
  if (exclude_current_positions_from_observation) keys.push_back("env.exclude_current_positions_from_observation");
  if (terminate_when_unhealthy) keys.push_back("env.terminate_when_unhealthy");
  return keys;
}

void EnvOptions::refuse_others(const std::string& env_id, const std::vector<std::string>& accepted) const {
  for (const std::string& key : set_keys()) {
    if (key == "env.max_episode_steps") continue;  // every env's (Registry::make applies it)
    if (std::find(accepted.begin(), accepted.end(), key.substr(4)) == accepted.end()) {
      throw std::invalid_argument(key + " is set, but " + env_id + " has no such setting");
    }
  }
}

void Registry::add(const std::string& id, std::function<std::unique_ptr<Env>()> make) {
  factories_.add(id, [id, make = std::move(make)](const EnvOptions& options) {
    options.refuse_others(id, {});
    return make();
  });
}

std::unique_ptr<Env> Registry::make(const std::string& id, const EnvOptions& options) const {
  if (options.max_episode_steps && *options.max_episode_steps < 1) {
    throw std::invalid_argument("env.max_episode_steps = " + std::to_string(*options.max_episode_steps) +
                                " must be >= 1 (leave it unset for the environment's own limit)");
  }
  std::unique_ptr<Env> env = factories_.at(id)(options);
  if (options.max_episode_steps) env->limit_episode_steps(*options.max_episode_steps);
  return env;
}

Registry& Registry::global() {
  static Registry registry = make_builtin_registry();
  return registry;
}

std::unique_ptr<Env> make_env(const std::string& id, const EnvOptions& options) {
  return Registry::global().make(id, options);
}

}  // namespace concord::envs
