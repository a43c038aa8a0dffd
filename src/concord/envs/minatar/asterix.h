#pragma once

#include <array>

#include "concord/envs/minatar/minatar_game.h"

namespace concord::envs::minatar {

// MinAtar's Asterix. The player walks on rows 1-8 of the grid; each of those eight rows holds at
// most one entity (an enemy, or gold worth +1 when the player takes it), which enters at the left
// or right edge and walks across. Touching an enemy ends the episode. Entities spawn every
// `spawn_speed` steps and all move every `move_speed` steps; with difficulty ramping both
// intervals shrink as the episode goes on.
//
// Channels: 0 player, 1 enemy, 2 trail (the cell an entity just left, which tells its direction),
// 3 gold. Minimal actions: no-op, left, up, right, down.
class Asterix final : public MinAtarGame {
 public:
  static constexpr int kChannels = 4;
  static constexpr int kSlots = 8;  // Rows 1-8, one entity each.
  static constexpr int kRampInterval = 100;
  static constexpr int kInitialSpawnSpeed = 10;
  static constexpr int kInitialMoveSpeed = 5;

  struct Entity {
    bool active = false;
    int x = 0;  // Its row is fixed by its slot: slot i lives on row i + 1.
    bool moving_right = false;
    bool gold = false;
  };

  struct State {
    int player_x = 5;
    int player_y = 5;
    std::array<Entity, kSlots> entities{};
    // Steps between spawns and between entity moves; the timers count down to the next one.
    int spawn_speed = kInitialSpawnSpeed;
    int spawn_timer = kInitialSpawnSpeed;
    int move_speed = kInitialMoveSpeed;
    int move_timer = kInitialMoveSpeed;
    // Difficulty ramp: steps left in the current level, and how many levels have passed.
    int ramp_timer = kRampInterval;
    int ramp_index = 0;
    bool terminal = false;
  };

  explicit Asterix(MinAtarOptions options = {});

  const State& state() const { return state_; }
  // For tests: continues from `state` as it is (positions must lie on the grid).
  void set_state(const State& state) { state_ = state; }

 private:
  void new_game() override;
  GameStep act(int action) override;
  void draw(Grid& grid) const override;

  void spawn_entity();
  // Resolves the player sharing a cell with the entity in `slot`: gold is taken, an enemy ends
  // the episode.
  void touch(int slot, GameStep& step);

  State state_;
};

}  // namespace concord::envs::minatar
