#pragma once

#include <vector>

#include "concord/envs/minatar/minatar_game.h"

namespace concord::envs::minatar {

// MinAtar's Seaquest, with the oxygen behaviour of MinAtar 1.0.11 and later (the gauge never
// flashes full on the step before the player suffocates).
//
// The player steers a two-cell submarine over rows 0-8 and fires torpedoes from its front. Fish
// and enemy submarines enter rows 1-8 from either side and swim across; each one a torpedo
// strikes pays +1, and enemy submarines fire torpedoes of their own. Divers drift across the same
// rows and are picked up by touching them, at most six at a time. Oxygen drains by one every step
// spent below the surface (row 0). Coming up with at least one diver on board refills it and
// costs one diver; coming up with all six pays one point per filled cell of the oxygen gauge and
// empties the boat. Each surfacing also makes enemies spawn more often, and every second one makes
// them swim faster, when ramping is on. The episode ends on touching a fish, a submarine or an
// enemy torpedo, when oxygen runs out, or on surfacing with no divers.
//
// Channels: 0 sub front, 1 sub back, 2 player torpedo, 3 trail (the cell a fish, enemy sub or
// diver just left), 4 enemy torpedo, 5 fish, 6 enemy sub, 7 oxygen gauge and 8 diver gauge (both
// on row 9), 9 diver. Minimal actions: all six.
class Seaquest final : public MinAtarGame {
 public:
  static constexpr int kChannels = 10;
  static constexpr int kMaxOxygen = 200;
  static constexpr int kMaxDivers = 6;
  static constexpr int kInitialSpawnSpeed = 20;
  static constexpr int kDiverSpawnSpeed = 30;
  static constexpr int kInitialMoveSpeed = 5;
  static constexpr int kDiverMoveSpeed = 5;
  static constexpr int kShotCoolDown = 5;
  static constexpr int kEnemyShotInterval = 10;

  // A torpedo, the player's or an enemy sub's; it moves one cell a step along its row.
  struct Torpedo {
    int x = 0;
    int y = 0;
    bool moving_right = false;
  };

  // A fish or a diver: moves one cell along its row whenever its timer, counted down one a step,
  // has reached zero.
  struct Swimmer {
    int x = 0;
    int y = 0;
    bool moving_right = false;
    int move_timer = 0;
  };

  struct EnemySub {
    int x = 0;
    int y = 0;
    bool moving_right = false;
    int move_timer = 0;
    int shot_timer = kEnemyShotInterval;
  };

  struct State {
    int sub_x = 5;
    int sub_y = 0;  // Row 0 is the surface.
    bool sub_facing_right = false;
    int oxygen = kMaxOxygen;
    // Divers on board. Surfacing with a full boat leaves it at -1, as MinAtar does (it empties
    // the boat and then also takes the one diver every surfacing costs); see act().
    int diver_count = 0;
    // Lists keep MinAtar's order (oldest first): it decides which of two candidates a torpedo
    // hits and the order enemy torpedoes are fired in.
    std::vector<Torpedo> player_torpedoes;
    std::vector<Torpedo> enemy_torpedoes;
    std::vector<Swimmer> fish;
    std::vector<EnemySub> enemy_subs;
    std::vector<Swimmer> divers;
    // Steps between enemy spawns (shrinks with ramping) and the countdown to the next; likewise
    // for divers, whose interval is fixed.
    int enemy_spawn_speed = kInitialSpawnSpeed;
    int enemy_spawn_timer = kInitialSpawnSpeed;
    int diver_spawn_timer = kDiverSpawnSpeed;
    // Steps an enemy waits between moves, given to it when it spawns and after each move.
    int move_speed = kInitialMoveSpeed;
    int ramp_index = 0;
    int shot_timer = 0;  // Steps until the player may fire again.
    // The player is at the surface and has already been through surfacing there, so staying at
    // row 0 does not surface again.
    bool surfaced = true;
    bool terminal = false;
  };

  explicit Seaquest(MinAtarOptions options = {});

  const State& state() const { return state_; }
  // For tests: continues from `state` as it is.
  void set_state(const State& state) { state_ = state; }

 private:
  void new_game() override;
  GameStep act(int action) override;
  void draw(Grid& grid) const override;

  void spawn_enemy();
  void spawn_diver();
  // Refills oxygen on reaching the surface with divers aboard; returns the bonus.
  int surface();
  bool at_player(int x, int y) const { return x == state_.sub_x && y == state_.sub_y; }

  State state_;
};

}  // namespace concord::envs::minatar
