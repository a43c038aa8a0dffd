#include "concord/envs/masked_observation.h"

#include <stdexcept>
#include <utility>

#include "concord/envs/classic_control/cartpole.h"
#include "concord/envs/classic_control/pendulum.h"

namespace concord::envs {
namespace {

EnvSpec masked_spec(const std::string& id, const Env& inner, const std::vector<bool>& keep) {
  EnvSpec spec = inner.spec();
  if (spec.observation_space.dtype() != Dtype::kFloat32) {
    throw std::invalid_argument(id + ": only float observations can be masked, and " + spec.id + " has " +
                                spec.observation_space.to_string());
  }
  if (static_cast<int64_t>(keep.size()) != spec.observation_space.flat_size()) {
    throw std::invalid_argument(id + ": the mask has " + std::to_string(keep.size()) + " entries, and " + spec.id +
                                " observes " + std::to_string(spec.observation_space.flat_size()));
  }
  spec.id = id;
  return spec;
}

}  // namespace

MaskedObservation::MaskedObservation(std::string id, std::unique_ptr<Env> inner, std::vector<bool> keep)
    : FloatEnv(masked_spec(id, *inner, keep)), inner_(std::move(inner)), keep_(std::move(keep)) {
  inner_->limit_episode_steps(0);  // this env's own limit (spec().max_episode_steps) truncates
}

std::unique_ptr<Env> MaskedObservation::cartpole_no_velocity() {
  // CartPole's observation: cart position, cart velocity, pole angle, pole angular velocity.
  return std::make_unique<MaskedObservation>("CartPoleNoVel-v1", std::make_unique<CartPole>(),
                                             std::vector<bool>{true, false, true, false});
}

std::unique_ptr<Env> MaskedObservation::pendulum_no_velocity() {
  // Pendulum's observation: cos theta, sin theta, angular velocity.
  return std::make_unique<MaskedObservation>("PendulumNoVel-v1", std::make_unique<Pendulum>(),
                                             std::vector<bool>{true, true, false});
}

void MaskedObservation::reset_state(float* observation) {
  // A seeded reset seeds the wrapped env; an unseeded one continues its stream.
  inner_->reset(reset_seed(), observation);
  mask(observation);
}

StepResult MaskedObservation::step_state(const Action& action, float* observation) {
  const StepResult result = inner_->step(action, observation);
  mask(observation);
  return result;
}

void MaskedObservation::mask(float* observation) const {
  for (size_t i = 0; i < keep_.size(); ++i) {
    if (!keep_[i]) observation[i] = 0.0f;
  }
}

}  // namespace concord::envs
