#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include "concord/core/rng.h"
#include "concord/envs/space.h"

namespace concord::envs {

// What the registry knows about an environment before making one.
struct EnvSpec {
  std::string id;
  Space observation_space;
  Space action_space;
  // Episodes are truncated after this many steps (Gymnasium's TimeLimit); 0 means never.
  int max_episode_steps = 0;
  // The return at which Gymnasium calls the task solved; nullopt when it names none.
  std::optional<double> reward_threshold;
  // The environment calls into an interpreter that one thread at a time may run (a Python env
  // holds the GIL while it steps), and exists only in this process. Policies that step envs beside
  // concurrent model work or in other processes refuse it (policy_registry.cpp).
  bool calls_interpreter = false;
};

// A wait for an environment's call (a Python env's step) that a stop signal ended (SIGINT,
// SIGTERM: core::requested_stop_signal): the run stops as that signal asks, not as a failure of
// the env.
class EnvInterrupted : public std::runtime_error {
 public:
  EnvInterrupted(const std::string& what, int signal_number) : std::runtime_error(what), signal_(signal_number) {}
  int signal_number() const { return signal_; }

 private:
  int signal_;
};

// One environment's action as the vector engine hands it over: an index for a Discrete action
// space, or a pointer to action_space.flat_size() floats for a Box.
struct Action {
  int64_t index = 0;
  const float* values = nullptr;
};

struct StepResult {
  float reward = 0.0f;
  // The MDP reached a terminal state: do not bootstrap from the next observation.
  bool terminated = false;
  // The episode was cut short (time limit): bootstrap from the final observation.
  bool truncated = false;
};

// A single environment with Gymnasium semantics (reset/step, terminated vs truncated, seeding).
//
// Environments never see threads or batches: they write their observation into a slice that
// the caller owns (observation_space.byte_size() bytes, elements of observation_space.dtype()),
// so the vector engine can hand each env a row of one contiguous batch buffer. An instance is not
// thread-safe; the engine gives each instance to one thread at a time.
//
// A concrete environment derives from TypedEnv<float> or TypedEnv<uint8_t> (below) and
// implements only reset_state() and step_state(); this base class owns the random generator and
// the time limit, so truncation is handled the same way everywhere.
class Env {
 public:
  virtual ~Env() = default;
  Env(const Env&) = delete;
  Env& operator=(const Env&) = delete;

  const EnvSpec& spec() const { return spec_; }

  // Starts a new episode. Like Gymnasium's reset(seed=...), a seed re-seeds the generator and
  // no seed continues the current one. `observation` holds one element of the observation space.
  void reset(std::optional<uint64_t> seed, void* observation) {
    if (seed) rng_.seed(*seed);
    reset_seed_ = seed;
    elapsed_steps_ = 0;
    reset_observation(observation);
  }

  // Advances one step. Truncation at max_episode_steps is reported as Gymnasium's TimeLimit
  // does: independently of termination, so both can be true on the same step.
  StepResult step(const Action& action, void* observation) {
    StepResult result = step_observation(action, observation);
    ++elapsed_steps_;
    if (spec_.max_episode_steps > 0 && elapsed_steps_ >= spec_.max_episode_steps) {
      result.truncated = true;
    }
    return result;
  }

  int elapsed_steps() const { return elapsed_steps_; }

  // Replaces the time limit (spec().max_episode_steps): Gymnasium's make(id, max_episode_steps=N).
  // For the registry, before the first reset.
  void limit_episode_steps(int max_episode_steps) { spec_.max_episode_steps = max_episode_steps; }

 protected:
  explicit Env(EnvSpec spec) : spec_(std::move(spec)) {}

  core::Rng& rng() { return rng_; }
  // The seed the current episode's reset() was given, if any: for an env that seeds a generator
  // of its own (a Python env's) instead of drawing from rng().
  std::optional<uint64_t> reset_seed() const { return reset_seed_; }

 private:
  // TypedEnv's bridge to the typed reset_state() and step_state().
  virtual void reset_observation(void* observation) = 0;
  virtual StepResult step_observation(const Action& action, void* observation) = 0;

  EnvSpec spec_;
  core::Rng rng_{0};
  std::optional<uint64_t> reset_seed_;
  int elapsed_steps_ = 0;
};

// The base of an environment whose observations are `Element`s (float or uint8_t), matching its
// observation space's dtype (checked at construction).
template <typename Element>
class TypedEnv : public Env {
 protected:
  explicit TypedEnv(EnvSpec spec) : Env(checked(std::move(spec))) {}

  // Draws a fresh initial state from rng() and writes its observation.
  virtual void reset_state(Element* observation) = 0;
  // Applies the action, writes the next observation and returns reward and termination.
  virtual StepResult step_state(const Action& action, Element* observation) = 0;

 private:
  static EnvSpec checked(EnvSpec spec) {
    constexpr Dtype kDtype = dtype_of<Element>();
    if (spec.observation_space.dtype() != kDtype) {
      throw std::logic_error("environment " + spec.id + ": observation space " + spec.observation_space.to_string() +
                             " does not hold " + dtype_name(kDtype) + " observations");
    }
    return spec;
  }
  void reset_observation(void* observation) final { reset_state(static_cast<Element*>(observation)); }
  StepResult step_observation(const Action& action, void* observation) final {
    return step_state(action, static_cast<Element*>(observation));
  }
};

// Environments with float32 observations (classic control) and with uint8 ones (grids, pixels).
using FloatEnv = TypedEnv<float>;
using ByteEnv = TypedEnv<uint8_t>;

}  // namespace concord::envs
