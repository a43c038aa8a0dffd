#include "concord/envs/exploration/deep_sea.h"

#include <algorithm>
#include <stdexcept>

namespace concord::envs {

DeepSea::DeepSea(int size, uint64_t mapping_seed) : FloatEnv(make_spec(size)), size_(size) {
  core::Rng mapping(mapping_seed);
  right_action_.resize(static_cast<size_t>(size) * static_cast<size_t>(size));
  for (uint8_t& action : right_action_) action = static_cast<uint8_t>(mapping() >> 63);
}

std::string DeepSea::id_for(int size) { return "DeepSea" + std::to_string(size) + "-v0"; }

EnvSpec DeepSea::make_spec(int size) {
  if (size < 1) throw std::invalid_argument("DeepSea: size " + std::to_string(size) + " must be >= 1");
  return EnvSpec{id_for(size), Space::box({int64_t{size} * size}, 0.0f, 1.0f), Space::discrete(2),
                 /*max_episode_steps=*/0, /*reward_threshold=*/std::nullopt};
}

void DeepSea::set_position(int row, int column) {
  if (row < 0 || row >= size_ || column < 0 || column >= size_) {
    throw std::invalid_argument("DeepSea" + std::to_string(size_) + ": no cell (" + std::to_string(row) + ", " +
                                std::to_string(column) + ")");
  }
  row_ = row;
  column_ = column;
}

void DeepSea::reset_state(float* observation) {
  row_ = 0;
  column_ = 0;
  write_observation(observation);
}

StepResult DeepSea::step_state(const Action& action, float* observation) {
  if (action.index != 0 && action.index != 1) {
    throw std::invalid_argument(spec().id + ": action " + std::to_string(action.index) + " is outside Discrete(2)");
  }
  if (row_ >= size_) throw std::logic_error(spec().id + ": step after the episode ended, without a reset");
  StepResult result;
  if (action.index == right_action(row_, column_)) {
    if (column_ == size_ - 1) result.reward += 1.0f;
    result.reward -= static_cast<float>(kMoveCost / size_);
    column_ = std::min(column_ + 1, size_ - 1);
  } else {
    column_ = std::max(column_ - 1, 0);
  }
  ++row_;
  result.terminated = row_ == size_;
  write_observation(observation);
  return result;
}

void DeepSea::write_observation(float* observation) const {
  std::fill(observation, observation + static_cast<size_t>(size_) * static_cast<size_t>(size_), 0.0f);
  if (row_ < size_) observation[row_ * size_ + column_] = 1.0f;
}

}  // namespace concord::envs
