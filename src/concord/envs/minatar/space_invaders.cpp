#include "concord/envs/minatar/space_invaders.h"

#include <algorithm>

namespace concord::envs::minatar {
namespace {

constexpr int kLastRow = kGridSize - 1;
constexpr int kLastColumn = kGridSize - 1;

constexpr int kCannonChannel = 0;
constexpr int kAlienChannel = 1;
constexpr int kAlienLeftChannel = 2;
constexpr int kAlienRightChannel = 3;
constexpr int kPlayerShotChannel = 4;
constexpr int kAlienShotChannel = 5;

using Layer = SpaceInvaders::Layer;

int count(const Layer& layer) {
  int total = 0;
  for (const auto& row : layer) total += static_cast<int>(std::count(row.begin(), row.end(), true));
  return total;
}

bool column_occupied(const Layer& layer, int column) {
  for (const auto& row : layer) {
    if (row[column]) return true;
  }
  return false;
}

bool row_occupied(const Layer& layer, int row) {
  const auto& cells = layer[row];
  return std::find(cells.begin(), cells.end(), true) != cells.end();
}

// Rows move by whole-row copies: `shift` > 0 moves everything down, < 0 up, and a row pushed off
// one edge comes back in at the other (numpy's roll), which callers clear where MinAtar does.
template <typename Sequence>
void roll(Sequence& sequence, int shift) {
  if (shift > 0) {
    std::rotate(sequence.rbegin(), sequence.rbegin() + shift, sequence.rend());
  } else {
    std::rotate(sequence.begin(), sequence.begin() - shift, sequence.end());
  }
}

void roll_rows(Layer& layer, int shift) { roll(layer, shift); }

void roll_columns(Layer& layer, int shift) {
  for (auto& row : layer) roll(row, shift);
}

}  // namespace

Layer SpaceInvaders::wave() {
  Layer layer{};
  for (int row = 0; row < 4; ++row) {
    for (int column = 2; column < 8; ++column) layer[row][column] = true;
  }
  return layer;
}

SpaceInvaders::SpaceInvaders(MinAtarOptions options)
    : MinAtarGame("SpaceInvaders", kChannels, {kNoop, kLeft, kRight, kFire}, options) {}

void SpaceInvaders::new_game() { state_ = State{}; }

void SpaceInvaders::move_aliens() {
  State& s = state_;
  // A thinning wave speeds up: with n aliens left it never waits more than n steps.
  s.alien_move_timer = std::min(count(s.aliens), s.alien_move_interval);
  const bool at_edge = (s.alien_direction < 0 && column_occupied(s.aliens, 0)) ||
                       (s.alien_direction > 0 && column_occupied(s.aliens, kLastColumn));
  if (at_edge) {
    s.alien_direction = -s.alien_direction;
    // Stepping down from the bottom row ends the game (the wave still rolls, as MinAtar's does).
    if (row_occupied(s.aliens, kLastRow)) s.terminal = true;
    roll_rows(s.aliens, 1);
  } else {
    roll_columns(s.aliens, s.alien_direction);
  }
  if (s.aliens[kLastRow][s.cannon_x]) s.terminal = true;
}

void SpaceInvaders::alien_fires() {
  State& s = state_;
  // Columns are searched outwards from the cannon's, the left one first on a tie; the lowest
  // alien of the first occupied column fires. A wave is never empty here: it is refilled at the
  // end of the step that clears it.
  for (int distance = 0; distance < kGridSize; ++distance) {
    for (const int column : {s.cannon_x - distance, s.cannon_x + distance}) {
      if (column < 0 || column > kLastColumn) continue;
      for (int row = kLastRow; row >= 0; --row) {
        if (s.aliens[row][column]) {
          s.alien_shots[row][column] = true;
          return;
        }
      }
    }
  }
}

GameStep SpaceInvaders::act(int action) {
  GameStep step;
  State& s = state_;
  if (s.terminal) {
    step.terminal = true;
    return step;
  }

  // Firing takes the step: the cannon does not also move.
  if (action == kFire) {
    if (s.shot_timer == 0) {
      s.player_shots[kLastRow][s.cannon_x] = true;
      s.shot_timer = kShotCoolDown;
    }
  } else if (action == kLeft) {
    s.cannon_x = std::max(0, s.cannon_x - 1);
  } else if (action == kRight) {
    s.cannon_x = std::min(kLastColumn, s.cannon_x + 1);
  }

  // Shots move a row a step; a new shot leaves the cannon's row at once, and shots leaving the
  // grid are gone.
  roll_rows(s.player_shots, -1);
  s.player_shots[kLastRow].fill(false);
  roll_rows(s.alien_shots, 1);
  s.alien_shots[0].fill(false);
  if (s.alien_shots[kLastRow][s.cannon_x]) s.terminal = true;

  if (s.aliens[kLastRow][s.cannon_x]) s.terminal = true;
  if (s.alien_move_timer == 0) move_aliens();
  if (s.alien_shot_timer == 0) {
    s.alien_shot_timer = kAlienShotInterval;
    alien_fires();
  }

  // Only a shot and an alien that end the step on the same cell meet: ones that swap cells pass.
  int reward = 0;
  for (int row = 0; row < kGridSize; ++row) {
    for (int column = 0; column < kGridSize; ++column) {
      if (s.aliens[row][column] && s.player_shots[row][column]) {
        s.aliens[row][column] = false;
        s.player_shots[row][column] = false;
        ++reward;
      }
    }
  }

  if (s.shot_timer > 0) --s.shot_timer;
  --s.alien_move_timer;
  --s.alien_shot_timer;
  if (count(s.aliens) == 0) {
    // The new wave keeps the old one's heading and move timer.
    if (ramping() && s.alien_move_interval > kFastestMoveInterval) {
      --s.alien_move_interval;
      ++s.ramp_index;
    }
    s.aliens = wave();
  }

  step.reward = static_cast<float>(reward);
  step.terminal = s.terminal;
  return step;
}

void SpaceInvaders::draw(Grid& grid) const {
  const State& s = state_;
  grid.set(kLastRow, s.cannon_x, kCannonChannel);
  const int heading_channel = s.alien_direction < 0 ? kAlienLeftChannel : kAlienRightChannel;
  for (int row = 0; row < kGridSize; ++row) {
    for (int column = 0; column < kGridSize; ++column) {
      if (s.aliens[row][column]) {
        grid.set(row, column, kAlienChannel);
        grid.set(row, column, heading_channel);
      }
      if (s.player_shots[row][column]) grid.set(row, column, kPlayerShotChannel);
      if (s.alien_shots[row][column]) grid.set(row, column, kAlienShotChannel);
    }
  }
}

}  // namespace concord::envs::minatar
