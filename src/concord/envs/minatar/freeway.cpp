#include "concord/envs/minatar/freeway.h"

#include <algorithm>
#include <cstdlib>

namespace concord::envs::minatar {
namespace {

constexpr int kLastColumn = kGridSize - 1;
constexpr int kBottomRow = kGridSize - 1;
constexpr int kMaxCarSpeed = 5;

}  // namespace

Freeway::Freeway(MinAtarOptions options) : MinAtarGame("Freeway", kChannels, {kNoop, kUp, kDown}, options) {
  // A usable state before the first reset: every lane with a slow car heading right.
  for (Car& car : state_.cars) car = Car{0, 1, 1};
}

void Freeway::randomize_cars() {
  // MinAtar draws all eight magnitudes first, then all eight directions.
  int magnitude[kLanes];
  for (int lane = 0; lane < kLanes; ++lane) magnitude[lane] = 1 + uniform_int(kMaxCarSpeed);
  for (int lane = 0; lane < kLanes; ++lane) {
    Car& car = state_.cars[lane];
    car.speed = uniform_int(2) == 0 ? -magnitude[lane] : magnitude[lane];
    car.timer = magnitude[lane];
  }
}

void Freeway::new_game() {
  state_ = State{};
  randomize_cars();
  for (Car& car : state_.cars) car.x = 0;
}

GameStep Freeway::act(int action) {
  GameStep step;
  State& s = state_;
  if (s.terminal) {
    step.terminal = true;
    return step;
  }

  if (s.move_timer == 0 && (action == kUp || action == kDown)) {
    s.move_timer = kPlayerSpeed;
    s.chicken_y = action == kUp ? std::max(0, s.chicken_y - 1) : std::min(kBottomRow, s.chicken_y + 1);
  }

  if (s.chicken_y == 0) {
    step.reward += 1.0f;
    randomize_cars();
    s.chicken_y = kBottomRow;
  }

  // A car knocks the chicken back both when the chicken is already in its cell and when the car
  // moves onto it; lanes are handled in order, so a car later in the order sees the chicken
  // where an earlier one may have sent it.
  for (int lane = 0; lane < kLanes; ++lane) {
    Car& car = s.cars[lane];
    const int row = lane + 1;
    if (car.x == kChickenColumn && row == s.chicken_y) s.chicken_y = kBottomRow;
    if (car.timer == 0) {
      car.timer = std::abs(car.speed);
      car.x += car.speed > 0 ? 1 : -1;
      if (car.x < 0) {
        car.x = kLastColumn;
      } else if (car.x > kLastColumn) {
        car.x = 0;
      }
      if (car.x == kChickenColumn && row == s.chicken_y) s.chicken_y = kBottomRow;
    } else {
      --car.timer;
    }
  }

  if (s.move_timer > 0) --s.move_timer;
  --s.terminate_timer;
  if (s.terminate_timer < 0) s.terminal = true;
  step.terminal = s.terminal;
  return step;
}

void Freeway::draw(Grid& grid) const {
  const State& s = state_;
  grid.set(s.chicken_y, kChickenColumn, 0);
  for (int lane = 0; lane < kLanes; ++lane) {
    const Car& car = s.cars[lane];
    const int row = lane + 1;
    grid.set(row, car.x, 1);
    // The trail wraps around the edges as the car does.
    int back = car.speed > 0 ? car.x - 1 : car.x + 1;
    if (back < 0) {
      back = kLastColumn;
    } else if (back > kLastColumn) {
      back = 0;
    }
    grid.set(row, back, 1 + std::abs(car.speed));
  }
}

}  // namespace concord::envs::minatar
