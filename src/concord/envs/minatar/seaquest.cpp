#include "concord/envs/minatar/seaquest.h"

#include <algorithm>

namespace concord::envs::minatar {
namespace {

constexpr int kLastColumn = kGridSize - 1;
// The player may not dive into the bottom row, which holds the gauges.
constexpr int kDeepestPlayerRow = kGridSize - 2;
// Enemies and divers swim in rows 1-8.
constexpr int kTopSpawnRow = 1;
constexpr int kSpawnRows = 8;
constexpr int kGaugeRow = kGridSize - 1;

constexpr int kSubFrontChannel = 0;
constexpr int kSubBackChannel = 1;
constexpr int kPlayerTorpedoChannel = 2;
constexpr int kTrailChannel = 3;
constexpr int kEnemyTorpedoChannel = 4;
constexpr int kFishChannel = 5;
constexpr int kEnemySubChannel = 6;
constexpr int kOxygenChannel = 7;
constexpr int kDiverGaugeChannel = 8;
constexpr int kDiverChannel = 9;

bool off_grid(int x) { return x < 0 || x > kLastColumn; }
int step_of(bool moving_right) { return moving_right ? 1 : -1; }

// Index of the first element standing on (x, y), or -1.
template <typename T>
int find_at(const std::vector<T>& items, int x, int y) {
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].x == x && items[i].y == y) return static_cast<int>(i);
  }
  return -1;
}

template <typename T>
void erase_at(std::vector<T>& items, int index) {
  items.erase(items.begin() + index);
}

// Filled cells of the oxygen gauge; a spent tank (oxygen may go below zero on the last step)
// shows none.
int oxygen_cells(int oxygen) { return std::max(0, oxygen) * kGridSize / Seaquest::kMaxOxygen; }

}  // namespace

Seaquest::Seaquest(MinAtarOptions options)
    : MinAtarGame("Seaquest", kChannels, {kNoop, kLeft, kUp, kRight, kDown, kFire}, options) {
  // A handful of objects is ever alive at once; reserving keeps steps free of allocation.
  state_.player_torpedoes.reserve(16);
  state_.enemy_torpedoes.reserve(32);
  state_.fish.reserve(32);
  state_.enemy_subs.reserve(32);
  state_.divers.reserve(16);
}

void Seaquest::new_game() {
  // Start from the defaults but hand the old lists' storage over, emptied.
  State fresh;
  fresh.player_torpedoes.swap(state_.player_torpedoes);
  fresh.enemy_torpedoes.swap(state_.enemy_torpedoes);
  fresh.fish.swap(state_.fish);
  fresh.enemy_subs.swap(state_.enemy_subs);
  fresh.divers.swap(state_.divers);
  fresh.player_torpedoes.clear();
  fresh.enemy_torpedoes.clear();
  fresh.fish.clear();
  fresh.enemy_subs.clear();
  fresh.divers.clear();
  state_ = std::move(fresh);
}

void Seaquest::spawn_enemy() {
  State& s = state_;
  // All three draws are taken even when the spawn is then refused.
  const bool from_left = uniform() < 0.5;
  const bool is_sub = uniform() < 1.0 / 3.0;
  const int row = kTopSpawnRow + uniform_int(kSpawnRows);
  // An enemy would pass through one swimming the other way in its row; MinAtar skips the spawn.
  for (const EnemySub& sub : s.enemy_subs) {
    if (sub.y == row && sub.moving_right != from_left) return;
  }
  for (const Swimmer& fish : s.fish) {
    if (fish.y == row && fish.moving_right != from_left) return;
  }
  const int x = from_left ? 0 : kLastColumn;
  if (is_sub) {
    s.enemy_subs.push_back(EnemySub{x, row, from_left, s.move_speed, kEnemyShotInterval});
  } else {
    s.fish.push_back(Swimmer{x, row, from_left, s.move_speed});
  }
}

void Seaquest::spawn_diver() {
  const bool from_left = uniform() < 0.5;
  const int row = kTopSpawnRow + uniform_int(kSpawnRows);
  state_.divers.push_back(Swimmer{from_left ? 0 : kLastColumn, row, from_left, kDiverMoveSpeed});
}

int Seaquest::surface() {
  State& s = state_;
  s.surfaced = true;
  int bonus = 0;
  if (s.diver_count == kMaxDivers) {
    s.diver_count = 0;
    bonus = oxygen_cells(s.oxygen);
  }
  s.oxygen = kMaxOxygen;
  // MinAtar takes a diver on every surfacing, after emptying a full boat too, which leaves the
  // count at -1; we keep that so the games stay the same.
  --s.diver_count;
  // Ramping stops once enemies spawn every step and move every second step.
  if (ramping() && (s.enemy_spawn_speed > 1 || s.move_speed > 2)) {
    if (s.move_speed > 2 && s.ramp_index % 2 == 1) --s.move_speed;
    if (s.enemy_spawn_speed > 1) --s.enemy_spawn_speed;
    ++s.ramp_index;
  }
  return bonus;
}

GameStep Seaquest::act(int action) {
  GameStep step;
  State& s = state_;
  if (s.terminal) {
    step.terminal = true;
    return step;
  }
  int reward = 0;

  // Spawning comes first, so a newcomer moves (or is hit) in the step it appears.
  if (s.enemy_spawn_timer == 0) {
    spawn_enemy();
    s.enemy_spawn_timer = s.enemy_spawn_speed;
  }
  if (s.diver_spawn_timer == 0) {
    spawn_diver();
    s.diver_spawn_timer = kDiverSpawnSpeed;
  }

  // Firing takes the step: the sub does not also move.
  if (action == kFire) {
    if (s.shot_timer == 0) {
      s.player_torpedoes.push_back(Torpedo{s.sub_x, s.sub_y, s.sub_facing_right});
      s.shot_timer = kShotCoolDown;
    }
  } else if (action == kLeft) {
    s.sub_x = std::max(0, s.sub_x - 1);
    s.sub_facing_right = false;
  } else if (action == kRight) {
    s.sub_x = std::min(kLastColumn, s.sub_x + 1);
    s.sub_facing_right = true;
  } else if (action == kUp) {
    s.sub_y = std::max(0, s.sub_y - 1);
  } else if (action == kDown) {
    s.sub_y = std::min(kDeepestPlayerRow, s.sub_y + 1);
  }

  // Each list is walked newest first, as MinAtar walks it, and an object that leaves is erased
  // where it stands; the ones still to visit sit before it and keep their places.
  for (int i = static_cast<int>(s.player_torpedoes.size()) - 1; i >= 0; --i) {
    Torpedo& torpedo = s.player_torpedoes[i];
    torpedo.x += step_of(torpedo.moving_right);
    if (off_grid(torpedo.x)) {
      erase_at(s.player_torpedoes, i);
      continue;
    }
    // A torpedo landing on a fish and an enemy sub at once takes the fish.
    const int fish = find_at(s.fish, torpedo.x, torpedo.y);
    if (fish >= 0) {
      erase_at(s.fish, fish);
      erase_at(s.player_torpedoes, i);
      ++reward;
      continue;
    }
    const int sub = find_at(s.enemy_subs, torpedo.x, torpedo.y);
    if (sub >= 0) {
      erase_at(s.enemy_subs, sub);
      erase_at(s.player_torpedoes, i);
      ++reward;
    }
  }

  // Divers are collected both where the player moved onto them and where they drift onto the
  // player; with a full boat they swim through.
  for (int i = static_cast<int>(s.divers.size()) - 1; i >= 0; --i) {
    Swimmer& diver = s.divers[i];
    if (at_player(diver.x, diver.y) && s.diver_count < kMaxDivers) {
      erase_at(s.divers, i);
      ++s.diver_count;
    } else if (diver.move_timer == 0) {
      diver.move_timer = kDiverMoveSpeed;
      diver.x += step_of(diver.moving_right);
      if (off_grid(diver.x)) {
        erase_at(s.divers, i);
      } else if (at_player(diver.x, diver.y) && s.diver_count < kMaxDivers) {
        erase_at(s.divers, i);
        ++s.diver_count;
      }
    } else {
      --diver.move_timer;
    }
  }

  // Contact is checked before an enemy moves (the player moved onto it) and after (it moved onto
  // the player). An enemy that moves onto a player torpedo is destroyed by it.
  for (int i = static_cast<int>(s.enemy_subs.size()) - 1; i >= 0; --i) {
    EnemySub sub = s.enemy_subs[i];
    bool gone = false;
    if (at_player(sub.x, sub.y)) s.terminal = true;
    if (sub.move_timer == 0) {
      sub.move_timer = s.move_speed;
      sub.x += step_of(sub.moving_right);
      if (off_grid(sub.x)) {
        gone = true;
      } else if (at_player(sub.x, sub.y)) {
        s.terminal = true;
      } else {
        const int torpedo = find_at(s.player_torpedoes, sub.x, sub.y);
        if (torpedo >= 0) {
          erase_at(s.player_torpedoes, torpedo);
          ++reward;
          gone = true;
        }
      }
    } else {
      --sub.move_timer;
    }
    // MinAtar lets a sub fire in the step it leaves the grid or is destroyed; a torpedo fired off
    // the grid is dropped below before it can touch anything.
    if (sub.shot_timer == 0) {
      sub.shot_timer = kEnemyShotInterval;
      s.enemy_torpedoes.push_back(Torpedo{sub.x, sub.y, sub.moving_right});
    } else {
      --sub.shot_timer;
    }
    if (gone) {
      erase_at(s.enemy_subs, i);
    } else {
      s.enemy_subs[i] = sub;
    }
  }

  for (int i = static_cast<int>(s.enemy_torpedoes.size()) - 1; i >= 0; --i) {
    Torpedo& torpedo = s.enemy_torpedoes[i];
    if (at_player(torpedo.x, torpedo.y)) s.terminal = true;
    torpedo.x += step_of(torpedo.moving_right);
    if (off_grid(torpedo.x)) {
      erase_at(s.enemy_torpedoes, i);
    } else if (at_player(torpedo.x, torpedo.y)) {
      s.terminal = true;
    }
  }

  for (int i = static_cast<int>(s.fish.size()) - 1; i >= 0; --i) {
    Swimmer& fish = s.fish[i];
    if (at_player(fish.x, fish.y)) s.terminal = true;
    if (fish.move_timer == 0) {
      fish.move_timer = s.move_speed;
      fish.x += step_of(fish.moving_right);
      if (off_grid(fish.x)) {
        erase_at(s.fish, i);
      } else if (at_player(fish.x, fish.y)) {
        s.terminal = true;
      } else {
        const int torpedo = find_at(s.player_torpedoes, fish.x, fish.y);
        if (torpedo >= 0) {
          erase_at(s.player_torpedoes, torpedo);
          erase_at(s.fish, i);
          ++reward;
        }
      }
    } else {
      --fish.move_timer;
    }
  }

  if (s.enemy_spawn_timer > 0) --s.enemy_spawn_timer;
  if (s.diver_spawn_timer > 0) --s.diver_spawn_timer;
  if (s.shot_timer > 0) --s.shot_timer;

  // The tank is checked before this step's breath is taken, so the player lives through the step
  // that empties it and dies on the next.
  if (s.oxygen <= 0) s.terminal = true;
  if (s.sub_y > 0) {
    --s.oxygen;
    s.surfaced = false;
  } else if (!s.surfaced) {
    if (s.diver_count == 0) {
      s.terminal = true;
    } else {
      reward += surface();
    }
  }

  step.reward = static_cast<float>(reward);
  step.terminal = s.terminal;
  return step;
}

void Seaquest::draw(Grid& grid) const {
  const State& s = state_;
  grid.set(s.sub_y, s.sub_x, kSubFrontChannel);
  grid.set(s.sub_y, s.sub_facing_right ? s.sub_x - 1 : s.sub_x + 1, kSubBackChannel);
  for (int x = 0; x < oxygen_cells(s.oxygen); ++x) grid.set(kGaugeRow, x, kOxygenChannel);
  // The diver gauge fills leftwards from column 8.
  for (int i = 0; i < s.diver_count; ++i) grid.set(kGaugeRow, kLastColumn - 1 - i, kDiverGaugeChannel);
  for (const Torpedo& torpedo : s.player_torpedoes) grid.set(torpedo.y, torpedo.x, kPlayerTorpedoChannel);
  for (const Torpedo& torpedo : s.enemy_torpedoes) grid.set(torpedo.y, torpedo.x, kEnemyTorpedoChannel);
  // Grid::set drops a trail that would fall off the grid.
  auto trail = [&grid](int x, int y, bool moving_right) { grid.set(y, x - step_of(moving_right), kTrailChannel); };
  for (const Swimmer& fish : s.fish) {
    grid.set(fish.y, fish.x, kFishChannel);
    trail(fish.x, fish.y, fish.moving_right);
  }
  for (const EnemySub& sub : s.enemy_subs) {
    grid.set(sub.y, sub.x, kEnemySubChannel);
    trail(sub.x, sub.y, sub.moving_right);
  }
  for (const Swimmer& diver : s.divers) {
    grid.set(diver.y, diver.x, kDiverChannel);
    trail(diver.x, diver.y, diver.moving_right);
  }
}

}  // namespace concord::envs::minatar
