#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "concord/envs/env.h"

namespace concord::envs {

// DeepSea(N) as bsuite defines it (Osband et al., "Behaviour Suite for RL", deep_sea): an N x N
// grid the agent descends one row per step from the top-left cell, moving one column left or
// right. Which action index means "right" is drawn per cell from `mapping_seed` (fixed for the
// environment, so every env of a run shares one MDP), so no constant action sequence solves it.
//
//   right: column = min(column + 1, N - 1), reward -0.01 / N;   left: column = max(column - 1, 0)
//   going right from the last column (only possible in the last row) also earns +1
//
// The episode terminates after N steps. Only the all-right path earns the treasure (return
// 1 - 0.01 = 0.99); a dithering agent finds it with probability 2^-N per episode. Observation:
// float32 one-hot of (row, column) over the N x N grid, flattened row-major; all zeros once the
// agent has left the grid (the final observation).
class DeepSea final : public FloatEnv {
 public:
  static constexpr double kMoveCost = 0.01;

  explicit DeepSea(int size, uint64_t mapping_seed = 0);

  // "DeepSea<N>-v0", Box(N * N) in [0, 1], Discrete(2), no time limit (episodes last N steps).
  static EnvSpec make_spec(int size);
  static std::string id_for(int size);

  int size() const { return size_; }
  // The action index that moves right in a cell.
  int64_t right_action(int row, int column) const { return right_action_[static_cast<size_t>(row * size_ + column)]; }
  int row() const { return row_; }
  int column() const { return column_; }
  // For tests: places the agent mid-episode; the step counter is left alone.
  void set_position(int row, int column);

 private:
  void reset_state(float* observation) override;
  StepResult step_state(const Action& action, float* observation) override;
  void write_observation(float* observation) const;

  int size_;
  std::vector<uint8_t> right_action_;
  int row_ = 0;
  int column_ = 0;
};

}  // namespace concord::envs
