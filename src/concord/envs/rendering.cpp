#include "concord/envs/rendering.h"

#include <cstring>

namespace concord::envs {

void EnvRenderer::capture(const Env& env, const void* observation, std::vector<uint8_t>& snapshot) {
  snapshot.resize(static_cast<size_t>(env.spec().observation_space.byte_size()));
  std::memcpy(snapshot.data(), observation, snapshot.size());
}

std::unique_ptr<EnvRenderer> make_env_renderer(const Env& env) {
  if (auto renderer = make_classic_control_renderer(env.spec())) return renderer;
  if (auto renderer = make_minatar_renderer(env.spec())) return renderer;
  return make_mujoco_renderer(env);
}

std::string renderable_envs() {
  return "CartPole-v1, CartPoleNoVel-v1, Pendulum-v1, PendulumNoVel-v1, MountainCar-v0, "
         "MountainCarContinuous-v0, SparseMountainCar-v0, Acrobot-v1, MinAtar/* and MuJoCo/*";
}

}  // namespace concord::envs
