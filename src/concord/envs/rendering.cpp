#include "concord/envs/rendering.h"

namespace concord::envs {

std::unique_ptr<ObservationRenderer> make_observation_renderer(const EnvSpec& spec) {
  if (auto renderer = make_classic_control_renderer(spec)) return renderer;
  return make_minatar_renderer(spec);
}

std::string renderable_envs() {
  return "CartPole-v1, CartPoleNoVel-v1, Pendulum-v1, PendulumNoVel-v1, MountainCar-v0, "
         "MountainCarContinuous-v0, SparseMountainCar-v0, Acrobot-v1 and MinAtar/*";
}

}  // namespace concord::envs
