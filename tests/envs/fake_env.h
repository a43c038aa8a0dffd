#pragma once

// A dummy environment that exists only to exercise the vector engine: its observations spell out
// who it is and where it is, so a test can predict every batch row exactly.

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include "concord/envs/env.h"
#include "concord/envs/registry.h"

namespace concord::envs::testing {

struct FakeEnvOptions {
  int terminate_after = 5;    // Episode of instance i terminates after terminate_after + i % 3 steps.
  int max_episode_steps = 0;  // Time limit (truncation); 0: none.
  bool box_actions = false;   // Box(-1, 1, (2,)) actions instead of Discrete(3).
  int throw_at_step = -1;     // Instance throw_instance throws on this (total) step count; -1: never.
  int throw_instance = 0;
  int step_sleep_us = 0;  // Sleeps this long in every step (slow envs).
};

// Observation (Box(4)): [instance index, episode number, step in episode, seed draw], where the
// seed draw is a 24-bit integer drawn from the env's generator at every reset (so it is exact in
// float). Reward: 1 + action for Discrete(3), action[0] + 10 * action[1] for Box(2).
// Instance indices count the envs the factory made, in order, so env i of a VectorEnv (made
// first) is instance i. Throws std::logic_error if two threads ever step it at once.
class FakeEnv final : public FloatEnv {
 public:
  FakeEnv(int index, const FakeEnvOptions& options) : FloatEnv(make_spec(options)), index_(index), options_(options) {}

  static EnvSpec make_spec(const FakeEnvOptions& options) {
    return EnvSpec{"Fake", Space::box({4}, -1e9f, 1e9f),
                   options.box_actions ? Space::box({2}, -1.0f, 1.0f) : Space::discrete(3), options.max_episode_steps,
                   std::nullopt};
  }

  int episode_length() const { return options_.terminate_after + index_ % 3; }
  // The draw a reset with generator state `rng` makes (for predicting observations).
  static float seed_draw(core::Rng& rng) { return static_cast<float>(rng() >> 40); }

 private:
  void reset_state(float* observation) override {
    ++episode_;
    step_ = 0;
    draw_ = seed_draw(rng());
    write(observation);
  }

  StepResult step_state(const Action& action, float* observation) override {
    if (busy_.exchange(true)) throw std::logic_error("FakeEnv stepped by two threads at once");
    if (options_.step_sleep_us > 0) {
      std::this_thread::sleep_for(std::chrono::microseconds(options_.step_sleep_us));
    }
    ++total_steps_;
    if (index_ == options_.throw_instance && total_steps_ == options_.throw_at_step) {
      busy_.store(false);
      throw std::runtime_error("FakeEnv: planned failure");
    }
    ++step_;
    write(observation);
    StepResult result;
    result.reward =
        options_.box_actions ? action.values[0] + 10.0f * action.values[1] : 1.0f + static_cast<float>(action.index);
    result.terminated = step_ >= episode_length();
    busy_.store(false);
    return result;
  }

  void write(float* observation) const {
    observation[0] = static_cast<float>(index_);
    observation[1] = static_cast<float>(episode_);
    observation[2] = static_cast<float>(step_);
    observation[3] = draw_;
  }

  int index_;
  FakeEnvOptions options_;
  int episode_ = -1;
  int step_ = 0;
  int total_steps_ = 0;
  float draw_ = 0.0f;
  std::atomic<bool> busy_{false};
};

// Registers a fresh fake env id in Registry::global() and returns it. Each id has its own
// instance counter, so register one id per VectorEnv to have env i be instance i.
inline std::string register_fake_env(const FakeEnvOptions& options = {}) {
  static std::atomic<int> next_id{0};
  const std::string id = "Fake-" + std::to_string(next_id.fetch_add(1)) + "-v0";
  auto counter = std::make_shared<std::atomic<int>>(0);
  Registry::global().add(id, [options, counter] { return std::make_unique<FakeEnv>(counter->fetch_add(1), options); });
  return id;
}

}  // namespace concord::envs::testing
