#include "concord/envs/minatar/asterix.h"

#include <algorithm>

namespace concord::envs::minatar {
namespace {

constexpr int kLastColumn = kGridSize - 1;
// The player may not enter the top and bottom rows, which hold no entities.
constexpr int kTopPlayerRow = 1;
constexpr int kBottomPlayerRow = kGridSize - 2;

}  // namespace

Asterix::Asterix(MinAtarOptions options)
    : MinAtarGame("Asterix", kChannels, {kNoop, kLeft, kUp, kRight, kDown}, options) {}

void Asterix::new_game() { state_ = State{}; }

void Asterix::spawn_entity() {
  // MinAtar draws the side and the kind before it looks for a free row, so both draws are taken
  // even when every row is occupied and nothing spawns.
  const bool from_left = uniform() < 0.5;
  const bool gold = uniform() < 1.0 / 3.0;
  int free_slots[kSlots];
  int count = 0;
  for (int slot = 0; slot < kSlots; ++slot) {
    if (!state_.entities[slot].active) free_slots[count++] = slot;
  }
  if (count == 0) return;
  Entity& entity = state_.entities[free_slots[uniform_int(count)]];
  entity.active = true;
  entity.x = from_left ? 0 : kLastColumn;
  entity.moving_right = from_left;
  entity.gold = gold;
}

void Asterix::touch(int slot, GameStep& step) {
  Entity& entity = state_.entities[slot];
  if (entity.gold) {
    entity.active = false;
    step.reward += 1.0f;
  } else {
    // The step carries on: gold touched later in the same step still pays.
    state_.terminal = true;
  }
}

GameStep Asterix::act(int action) {
  GameStep step;
  State& s = state_;
  if (s.terminal) {
    step.terminal = true;
    return step;
  }

  if (s.spawn_timer == 0) {
    spawn_entity();
    s.spawn_timer = s.spawn_speed;
  }

  if (action == kLeft) {
    s.player_x = std::max(0, s.player_x - 1);
  } else if (action == kRight) {
    s.player_x = std::min(kLastColumn, s.player_x + 1);
  } else if (action == kUp) {
    s.player_y = std::max(kTopPlayerRow, s.player_y - 1);
  } else if (action == kDown) {
    s.player_y = std::min(kBottomPlayerRow, s.player_y + 1);
  }

  // Contact is checked after the player moves (walking into an entity, or one spawned onto the
  // player) and again after the entities move (an entity walking into the player).
  for (int slot = 0; slot < kSlots; ++slot) {
    const Entity& entity = s.entities[slot];
    if (entity.active && entity.x == s.player_x && slot + 1 == s.player_y) touch(slot, step);
  }
  if (s.move_timer == 0) {
    s.move_timer = s.move_speed;
    for (int slot = 0; slot < kSlots; ++slot) {
      Entity& entity = s.entities[slot];
      if (!entity.active) continue;
      entity.x += entity.moving_right ? 1 : -1;
      if (entity.x < 0 || entity.x > kLastColumn) {
        entity.active = false;
      } else if (entity.x == s.player_x && slot + 1 == s.player_y) {
        touch(slot, step);
      }
    }
  }

  --s.spawn_timer;
  --s.move_timer;

  // Each level lasts kRampInterval + 2 steps: the timer counts down to -1, and the step after
  // that changes the level instead of counting. A level change shortens the spawn interval, and every other one also
  // the move interval, until both reach one step.
  if (ramping() && (s.spawn_speed > 1 || s.move_speed > 1)) {
    if (s.ramp_timer >= 0) {
      --s.ramp_timer;
    } else {
      if (s.move_speed > 1 && s.ramp_index % 2 == 1) --s.move_speed;
      if (s.spawn_speed > 1) --s.spawn_speed;
      ++s.ramp_index;
      s.ramp_timer = kRampInterval;
    }
  }

  step.terminal = s.terminal;
  return step;
}

void Asterix::draw(Grid& grid) const {
  const State& s = state_;
  grid.set(s.player_y, s.player_x, 0);
  for (int slot = 0; slot < kSlots; ++slot) {
    const Entity& entity = s.entities[slot];
    if (!entity.active) continue;
    const int row = slot + 1;
    grid.set(row, entity.x, entity.gold ? 3 : 1);
    // Grid::set drops the trail of an entity still on its entry column.
    grid.set(row, entity.moving_right ? entity.x - 1 : entity.x + 1, 2);
  }
}

}  // namespace concord::envs::minatar
