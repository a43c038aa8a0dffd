#include "concord/envs/minatar/breakout.h"

#include <algorithm>

namespace concord::envs::minatar {
namespace {

constexpr int kLastRow = kGridSize - 1;
constexpr int kLastColumn = kGridSize - 1;
// Bricks fill these rows at the start and after every clearance.
constexpr int kFirstBrickRow = 1;
constexpr int kLastBrickRow = 3;

// Per heading (indexed by Breakout::Direction): the change in column and row for one step, and
// the heading after a bounce that reverses the horizontal motion, the vertical motion, or both.
constexpr int kDeltaX[4] = {-1, 1, 1, -1};
constexpr int kDeltaY[4] = {-1, -1, 1, 1};
constexpr int kFlipHorizontal[4] = {1, 0, 3, 2};
constexpr int kFlipVertical[4] = {3, 2, 1, 0};
constexpr int kFlipBoth[4] = {2, 3, 0, 1};

void fill_bricks(Breakout::State& state) {
  for (int row = kFirstBrickRow; row <= kLastBrickRow; ++row) state.bricks[row].fill(true);
}

bool any_brick(const Breakout::State& state) {
  for (const auto& row : state.bricks) {
    if (std::find(row.begin(), row.end(), true) != row.end()) return true;
  }
  return false;
}

}  // namespace

Breakout::Breakout(MinAtarOptions options) : MinAtarGame("Breakout", kChannels, {kNoop, kLeft, kRight}, options) {
  fill_bricks(state_);
}

void Breakout::new_game() {
  state_ = State{};
  // The ball starts on row 3 in a top corner column, heading down and away from that wall.
  if (uniform_int(2) == 0) {
    state_.ball_x = 0;
    state_.ball_dir = kDownRight;
  } else {
    state_.ball_x = kLastColumn;
    state_.ball_dir = kDownLeft;
  }
  state_.last_x = state_.ball_x;
  state_.last_y = state_.ball_y;
  fill_bricks(state_);
}

GameStep Breakout::act(int action) {
  GameStep step;
  State& s = state_;
  if (s.terminal) {
    step.terminal = true;
    return step;
  }

  if (action == kLeft) {
    s.paddle_x = std::max(0, s.paddle_x - 1);
  } else if (action == kRight) {
    s.paddle_x = std::min(kLastColumn, s.paddle_x + 1);
  }

  s.last_x = s.ball_x;
  s.last_y = s.ball_y;
  int x = s.ball_x + kDeltaX[s.ball_dir];
  int y = s.ball_y + kDeltaY[s.ball_dir];

  // A side wall clamps the ball to the edge column for this step (so it moves straight up or
  // down) and reverses its horizontal motion; the checks below then use the new heading.
  if (x < 0 || x > kLastColumn) {
    x = std::clamp(x, 0, kLastColumn);
    s.ball_dir = kFlipHorizontal[s.ball_dir];
  }

  bool hit_brick = false;
  if (y < 0) {
    y = 0;
    s.ball_dir = kFlipVertical[s.ball_dir];
  } else if (s.bricks[y][x]) {
    hit_brick = true;
    if (!s.strike) {
      // Break it and stay on the row the ball came from, heading back vertically.
      step.reward += 1.0f;
      s.strike = true;
      s.bricks[y][x] = false;
      y = s.last_y;
      s.ball_dir = kFlipVertical[s.ball_dir];
    }
  } else if (y == kLastRow) {
    if (!any_brick(s)) fill_bricks(s);
    if (s.ball_x == s.paddle_x) {
      // The paddle is right under the ball: it goes back up, keeping its horizontal motion.
      s.ball_dir = kFlipVertical[s.ball_dir];
      y = s.last_y;
    } else if (x == s.paddle_x) {
      // The ball meets the paddle's far side: it goes back the way it came.
      s.ball_dir = kFlipBoth[s.ball_dir];
      y = s.last_y;
    } else {
      s.terminal = true;
    }
  }
  if (!hit_brick) s.strike = false;

  s.ball_x = x;
  s.ball_y = y;
  step.terminal = s.terminal;
  return step;
}

void Breakout::draw(Grid& grid) const {
  const State& s = state_;
  grid.set(kLastRow, s.paddle_x, 0);
  grid.set(s.ball_y, s.ball_x, 1);
  grid.set(s.last_y, s.last_x, 2);
  for (int row = 0; row < kGridSize; ++row) {
    for (int column = 0; column < kGridSize; ++column) {
      if (s.bricks[row][column]) grid.set(row, column, 3);
    }
  }
}

}  // namespace concord::envs::minatar
