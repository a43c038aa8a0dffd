#include "concord/envs/registry.h"

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
  for (int size = 5; size <= 50; size += 5)
    registry.add(DeepSea::id_for(size), [size] { return std::make_unique<DeepSea>(size); });
  return registry;
}

}  // namespace

Registry& Registry::global() {
  static Registry registry = make_builtin_registry();
  return registry;
}

std::unique_ptr<Env> make_env(const std::string& id) { return Registry::global().make(id); }

}  // namespace concord::envs
