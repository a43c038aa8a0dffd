#include "concord/envs/registry.h"

#include <stdexcept>

#include "concord/envs/classic_control/acrobot.h"
#include "concord/envs/classic_control/cartpole.h"
#include "concord/envs/classic_control/mountain_car.h"
#include "concord/envs/classic_control/mountain_car_continuous.h"
#include "concord/envs/classic_control/pendulum.h"
#include "concord/envs/exploration/cartpole_swing_up.h"
#include "concord/envs/exploration/deep_sea.h"
#include "concord/envs/exploration/sparse_mountain_car.h"

namespace concord::envs {
namespace {

template <typename EnvType>
EnvFactory factory_of() {
  return [] { return std::make_unique<EnvType>(); };
}

Registry make_builtin_registry() {
  Registry registry;
  // One line per built-in environment; see docs/adding-an-environment.md.
  registry.add("CartPole-v1", factory_of<CartPole>());
  registry.add("Acrobot-v1", factory_of<Acrobot>());
  registry.add("MountainCar-v0", factory_of<MountainCar>());
  registry.add("MountainCarContinuous-v0", factory_of<MountainCarContinuous>());
  registry.add("Pendulum-v1", factory_of<Pendulum>());
  registry.add("SparseMountainCar-v0", factory_of<SparseMountainCar>());
  registry.add("CartPoleSwingUp-v0", factory_of<CartPoleSwingUp>());
  for (int size = 5; size <= 50; size += 5) registry.add(DeepSea::id_for(size), [size] { return std::make_unique<DeepSea>(size); });
  return registry;
}

}  // namespace

Registry& Registry::global() {
  static Registry registry = make_builtin_registry();
  return registry;
}

void Registry::add(const std::string& id, EnvFactory factory) {
  if (contains(id)) throw std::invalid_argument("environment '" + id + "' is already registered");
  entries_.emplace_back(id, std::move(factory));
}

bool Registry::contains(const std::string& id) const {
  for (const auto& entry : entries_) {
    if (entry.first == id) return true;
  }
  return false;
}

std::unique_ptr<Env> Registry::make(const std::string& id) const {
  for (const auto& entry : entries_) {
    if (entry.first == id) return entry.second();
  }
  std::string known;
  for (const auto& entry : entries_) known += (known.empty() ? "" : ", ") + entry.first;
  throw std::invalid_argument("unknown environment '" + id + "' (known: " + known + ")");
}

std::vector<std::string> Registry::ids() const {
  std::vector<std::string> result;
  for (const auto& entry : entries_) result.push_back(entry.first);
  return result;
}

std::unique_ptr<Env> make_env(const std::string& id) { return Registry::global().make(id); }

}  // namespace concord::envs
