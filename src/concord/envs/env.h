#pragma once

#include <cstdint>
#include <optional>
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
// the caller owns (observation_space.flat_size() floats), so the vector engine can hand each
// env a row of one contiguous batch buffer. An instance is not thread-safe; the engine gives
// each instance to one thread at a time.
//
// A concrete environment implements only reset_state() and step_state(); this base class owns
// the random generator and the time limit, so truncation is handled the same way everywhere.
class Env {
 public:
  virtual ~Env() = default;
  Env(const Env&) = delete;
  Env& operator=(const Env&) = delete;

  const EnvSpec& spec() const { return spec_; }

  // Starts a new episode. Like Gymnasium's reset(seed=...), a seed re-seeds the generator and
  // no seed continues the current one.
  void reset(std::optional<uint64_t> seed, float* observation) {
    if (seed) rng_.seed(*seed);
    elapsed_steps_ = 0;
    reset_state(observation);
  }

  // Advances one step. Truncation at max_episode_steps is reported as Gymnasium's TimeLimit
  // does: independently of termination, so both can be true on the same step.
  StepResult step(const Action& action, float* observation) {
    StepResult result = step_state(action, observation);
    ++elapsed_steps_;
    if (spec_.max_episode_steps > 0 && elapsed_steps_ >= spec_.max_episode_steps) {
      result.truncated = true;
    }
    return result;
  }

  int elapsed_steps() const { return elapsed_steps_; }

 protected:
  explicit Env(EnvSpec spec) : spec_(std::move(spec)) {}

  // Draws a fresh initial state from rng() and writes its observation.
  virtual void reset_state(float* observation) = 0;
  // Applies the action, writes the next observation and returns reward and termination.
  virtual StepResult step_state(const Action& action, float* observation) = 0;

  core::Rng& rng() { return rng_; }

 private:
  EnvSpec spec_;
  core::Rng rng_{0};
  int elapsed_steps_ = 0;
};

}  // namespace concord::envs
