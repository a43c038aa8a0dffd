#include "concord/envs/memory/memory_length.h"

#include <stdexcept>

namespace concord::envs {

MemoryLength::MemoryLength(int memory_length) : FloatEnv(make_spec(memory_length)), memory_length_(memory_length) {}

std::string MemoryLength::id_for(int memory_length) { return "MemoryLength" + std::to_string(memory_length) + "-v0"; }

std::vector<int> MemoryLength::bsuite_lengths() {
  std::vector<int> lengths;
  for (int length = 1; length <= 10; ++length) lengths.push_back(length);
  for (const int length : {12, 14, 17, 20, 25}) lengths.push_back(length);
  for (int length = 30; length <= 100; length += 10) lengths.push_back(length);
  return lengths;
}

EnvSpec MemoryLength::make_spec(int memory_length) {
  if (memory_length < 1) {
    throw std::invalid_argument("MemoryLength: memory length " + std::to_string(memory_length) + " must be >= 1");
  }
  // time in [0, 1], query 0 (one bit), context in {-1, 0, 1}.
  return EnvSpec{id_for(memory_length), Space::box({3}, -1.0f, 1.0f), Space::discrete(2),
                 /*max_episode_steps=*/0, /*reward_threshold=*/std::nullopt};
}

void MemoryLength::reset_state(float* observation) {
  timestep_ = 0;
  context_ = static_cast<int>(rng()() >> 63);
  write_observation(observation);
}

StepResult MemoryLength::step_state(const Action& action, float* observation) {
  if (action.index != 0 && action.index != 1) {
    throw std::invalid_argument(spec().id + ": action " + std::to_string(action.index) + " is outside Discrete(2)");
  }
  if (timestep_ > memory_length_) throw std::logic_error(spec().id + ": step after the episode ended, without a reset");
  // bsuite's order: the observation of the counter before it advances.
  write_observation(observation);
  ++timestep_;
  StepResult result;
  if (timestep_ - 1 < memory_length_) return result;
  result.reward = action.index == context_ ? 1.0f : -1.0f;
  result.terminated = true;
  return result;
}

void MemoryLength::write_observation(float* observation) const {
  observation[0] = 1.0f - static_cast<float>(timestep_) / static_cast<float>(memory_length_);
  observation[1] = 0.0f;  // the query: the index of the one bit, shown on t = L - 1
  observation[2] = timestep_ == 0 ? static_cast<float>(2 * context_ - 1) : 0.0f;
}

}  // namespace concord::envs
