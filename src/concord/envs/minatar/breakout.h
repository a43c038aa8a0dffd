#pragma once

#include <array>

#include "concord/envs/minatar/minatar_game.h"

namespace concord::envs::minatar {

// MinAtar's Breakout. A paddle on the bottom row returns a ball that moves one cell diagonally per
// step and breaks bricks in rows 1-3 for +1 each; when no brick is left, the three rows come back
// the next time the ball reaches the bottom row. The episode ends when the ball reaches the bottom
// row without meeting the paddle. There is no difficulty ramp: the ball's speed never changes.
//
// Channels: 0 paddle, 1 ball, 2 trail (the ball's previous cell, which tells its direction),
// 3 brick. Minimal actions: no-op, left, right.
class Breakout final : public MinAtarGame {
 public:
  static constexpr int kChannels = 4;
  // The ball's heading, in MinAtar's numbering.
  enum Direction : int { kUpLeft = 0, kUpRight = 1, kDownRight = 2, kDownLeft = 3 };

  struct State {
    int ball_x = 0;
    int ball_y = 3;
    int ball_dir = kDownRight;
    // The ball's cell before the last step: drawn as the trail.
    int last_x = 0;
    int last_y = 3;
    // The paddle's column; it always sits on row 9.
    int paddle_x = 4;
    // bricks[row][column].
    std::array<std::array<bool, kGridSize>, kGridSize> bricks{};
    // The last step broke a brick. While it is set, a ball moving into another brick passes
    // into that cell without breaking it (MinAtar's rule, kept for fidelity).
    bool strike = false;
    bool terminal = false;
  };

  explicit Breakout(MinAtarOptions options = {});

  const State& state() const { return state_; }
  // For tests: continues from `state` as it is (positions must lie on the grid).
  void set_state(const State& state) { state_ = state; }

 private:
  void new_game() override;
  GameStep act(int action) override;
  void draw(Grid& grid) const override;

  State state_;
};

}  // namespace concord::envs::minatar
