#pragma once

#include <array>

#include "concord/envs/minatar/minatar_game.h"

namespace concord::envs::minatar {

// MinAtar's Freeway. A chicken in column 4 crosses eight lanes of traffic (rows 1-8) from the
// bottom row to the top one; it may move one row at most every three steps. Reaching row 0 pays
// +1, sends the chicken back to row 9 and gives every car a fresh speed and direction (cars keep
// their columns). A car that meets the chicken sends it back to row 9 without ending anything.
// Cars wrap around at the edges. The episode ends after 2,500 steps: the step whose countdown goes
// below zero (the 2,501st) is terminal, as in MinAtar. There is no difficulty ramp.
//
// Channels: 0 chicken, 1 car, 2-6 trail of a car of speed 1-5 (the cell behind it, so its side
// gives the direction). Minimal actions: no-op, up, down.
class Freeway final : public MinAtarGame {
 public:
  static constexpr int kChannels = 7;
  static constexpr int kLanes = 8;
  static constexpr int kChickenColumn = 4;
  static constexpr int kPlayerSpeed = 3;  // Steps the chicken must wait after moving.
  static constexpr int kTimeLimit = 2500;

  struct Car {
    int x = 0;  // Its row is fixed by its lane: lane i is row i + 1.
    // Signed speed in 1..5: the sign is the direction (+ to the right), the magnitude how many
    // idle steps the car waits between moves.
    int speed = 1;
    // Idle steps left before the car's next move.
    int timer = 1;
  };

  struct State {
    std::array<Car, kLanes> cars{};
    int chicken_y = kGridSize - 1;
    // Steps left before the chicken may move again.
    int move_timer = kPlayerSpeed;
    // Counts down once per step; the episode ends when it goes below zero.
    int terminate_timer = kTimeLimit;
    bool terminal = false;
  };

  explicit Freeway(MinAtarOptions options = {});

  const State& state() const { return state_; }
  // For tests: continues from `state` as it is (positions must lie on the grid).
  void set_state(const State& state) { state_ = state; }

 private:
  void new_game() override;
  GameStep act(int action) override;
  void draw(Grid& grid) const override;

  // New speeds and directions for all cars, whose idle timers restart at their new speeds.
  void randomize_cars();

  State state_;
};

}  // namespace concord::envs::minatar
