#pragma once

#include <array>

#include "concord/envs/minatar/minatar_game.h"

namespace concord::envs::minatar {

// MinAtar's Space Invaders. The player's cannon moves along the bottom row and fires shots
// straight up; a wave of 4 x 6 aliens marches sideways, and whenever one of them stands at the
// edge it is heading for, the whole wave instead steps down a row and turns round. Each alien shot
// pays +1. The wave moves every `alien_move_interval` steps, and every step once no more aliens
// than that are left (one alien left moves every step). Every ten steps the alien nearest the
// cannon's column fires down. Clearing a wave brings a fresh one, faster by one step with ramping
// on, down to six. The episode ends when an alien shot or an alien reaches the cannon, or when
// the wave has to step down from the bottom row.
//
// Channels: 0 cannon, 1 alien, 2 alien while the wave heads left, 3 alien while it heads right,
// 4 player shot, 5 alien shot. Minimal actions: no-op, left, right, fire.
class SpaceInvaders final : public MinAtarGame {
 public:
  static constexpr int kChannels = 6;
  static constexpr int kShotCoolDown = 5;
  static constexpr int kInitialMoveInterval = 12;
  static constexpr int kFastestMoveInterval = 6;
  static constexpr int kAlienShotInterval = 10;

  // One flag per cell, indexed [row][column] with row 0 at the top.
  using Layer = std::array<std::array<bool, kGridSize>, kGridSize>;
  // A fresh wave: rows 0-3, columns 2-7.
  static Layer wave();

  struct State {
    int cannon_x = 5;
    Layer aliens = wave();
    Layer player_shots{};
    Layer alien_shots{};
    int alien_direction = -1;  // -1 heading left, +1 right.
    int alien_move_interval = kInitialMoveInterval;
    int alien_move_timer = kInitialMoveInterval;
    int alien_shot_timer = kAlienShotInterval;
    int ramp_index = 0;
    int shot_timer = 0;  // Steps until the player may fire again.
    bool terminal = false;
  };

  explicit SpaceInvaders(MinAtarOptions options = {});

  const State& state() const { return state_; }
  // For tests: continues from `state` as it is.
  void set_state(const State& state) { state_ = state; }

 private:
  void new_game() override;
  GameStep act(int action) override;
  void draw(Grid& grid) const override;

  void move_aliens();
  void alien_fires();

  State state_;
};

}  // namespace concord::envs::minatar
