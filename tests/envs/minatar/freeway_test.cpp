// Freeway's rules, each from a fixed state with the expected outcome worked out by hand from
// MinAtar's rules (the chicken's cooldown, car timers and wrapping, collisions, scoring at the
// top, the 2,500-step limit).
#include "concord/envs/minatar/freeway.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <set>
#include <vector>

#include "envs/minatar/game_harness.h"

namespace concord::envs::minatar {
namespace {

using testing::action;
using testing::count;
using testing::deterministic;
using testing::lit;
using Game = testing::GameHarness<Freeway>;
using State = Freeway::State;
using Car = Freeway::Car;
constexpr int kChannels = 7;
constexpr int kChicken = 0;
constexpr int kCar = 1;

// Every car in column 0 at speed +5 with a full timer: each first moves on step 6 and cannot
// reach the chicken's column 4 before step 24. The chicken may move at once.
State calm(int chicken_y) {
  State s;
  for (Car& car : s.cars) car = Car{0, 5, 5};
  s.chicken_y = chicken_y;
  s.move_timer = 0;
  return s;
}

TEST(FreewayTest, SpecsOfBothActionSets) {
  Freeway full;
  EXPECT_EQ(full.spec().id, "MinAtar/Freeway-v0");
  EXPECT_EQ(full.spec().observation_space.to_string(), "Box(0, 1, (10, 10, 7), uint8)");
  EXPECT_EQ(full.spec().action_space.to_string(), "Discrete(6)");
  EXPECT_EQ(Freeway::kChannels, 7);

  Freeway minimal(MinAtarOptions{0.1, true, true});
  EXPECT_EQ(minimal.spec().id, "MinAtar/Freeway-v1");
  EXPECT_EQ(minimal.spec().observation_space.to_string(), "Box(0, 1, (10, 10, 7), uint8)");
  EXPECT_EQ(minimal.spec().action_space.to_string(), "Discrete(3)");
  // MinAtar's minimal set: no-op, up, down.
  EXPECT_EQ(minimal.full_action(0), kNoop);
  EXPECT_EQ(minimal.full_action(1), kUp);
  EXPECT_EQ(minimal.full_action(2), kDown);
}

TEST(FreewayTest, ResetLinesCarsUpOnTheLeftWithRandomVelocities) {
  std::set<int> speeds;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    Freeway env(deterministic());
    std::vector<uint8_t> obs(100 * kChannels);
    env.reset(seed, obs.data());
    const State& s = env.state();
    EXPECT_EQ(s.chicken_y, 9);
    EXPECT_EQ(s.move_timer, 3);
    EXPECT_EQ(s.terminate_timer, 2500);
    EXPECT_FALSE(s.terminal);
    EXPECT_TRUE(lit(obs, kChannels, 9, 4, kChicken));
    EXPECT_EQ(count(obs, kChannels, kChicken), 1);
    EXPECT_EQ(count(obs, kChannels, kCar), 8);
    for (int lane = 0; lane < Freeway::kLanes; ++lane) {
      const Car& car = s.cars[lane];
      EXPECT_EQ(car.x, 0);
      ASSERT_GE(std::abs(car.speed), 1);
      ASSERT_LE(std::abs(car.speed), 5);
      EXPECT_EQ(car.timer, std::abs(car.speed));
      speeds.insert(car.speed);
      EXPECT_TRUE(lit(obs, kChannels, lane + 1, 0, kCar));
      // The trail of speed |v| is on channel 1 + |v|, behind the car: column 9 (wrapped) for a
      // car heading right, column 1 for one heading left.
      EXPECT_TRUE(lit(obs, kChannels, lane + 1, car.speed > 0 ? 9 : 1, 1 + std::abs(car.speed)));
    }
  }
  EXPECT_EQ(speeds, (std::set<int>{-5, -4, -3, -2, -1, 1, 2, 3, 4, 5}));
}

TEST(FreewayTest, ChickenMovesOneRowAtMostEveryThreeSteps) {
  Game game;
  game.env.set_state(calm(9));
  const int expected_rows[] = {8, 8, 8, 7, 7, 7, 6};
  for (const int row : expected_rows) {
    game.step(kUp);
    EXPECT_EQ(game.env.state().chicken_y, row);
  }
  EXPECT_TRUE(game.cell(6, 4, kChicken));
  EXPECT_EQ(game.env.state().move_timer, 2);

  // Left, right and fire neither move the chicken nor restart the cooldown.
  game.env.set_state(calm(5));
  for (const int other : {kLeft, kRight, kFire, kNoop}) {
    game.step(other);
    EXPECT_EQ(game.env.state().chicken_y, 5);
    EXPECT_EQ(game.env.state().move_timer, 0);
  }
  game.step(kDown);
  EXPECT_EQ(game.env.state().chicken_y, 6);

  // Pressing down on the bottom row goes nowhere but still starts the cooldown.
  game.env.set_state(calm(9));
  game.step(kDown);
  EXPECT_EQ(game.env.state().chicken_y, 9);
  EXPECT_EQ(game.env.state().move_timer, 2);
}

TEST(FreewayTest, CarsMoveAfterTheirSpeedInIdleStepsAndWrapAround) {
  Game game;
  State s = calm(9);
  s.cars[0] = Car{0, -3, 0};  // Row 1, heading left off column 0.
  s.cars[7] = Car{9, 1, 0};   // Row 8, heading right off column 9.
  game.env.set_state(s);
  game.step(kNoop);
  EXPECT_EQ(game.env.state().cars[0].x, 9);
  EXPECT_EQ(game.env.state().cars[0].timer, 3);
  EXPECT_EQ(game.env.state().cars[7].x, 0);
  EXPECT_EQ(game.env.state().cars[7].timer, 1);
  EXPECT_TRUE(game.cell(1, 9, kCar));
  EXPECT_TRUE(game.cell(1, 0, 1 + 3));  // Speed 3's trail, behind a left-bound car, wrapped.
  EXPECT_TRUE(game.cell(8, 0, kCar));
  EXPECT_TRUE(game.cell(8, 9, 1 + 1));

  // Speed 3 means three idle steps, then a move on the fourth.
  for (int i = 0; i < 3; ++i) {
    game.step(kNoop);
    EXPECT_EQ(game.env.state().cars[0].x, 9);
  }
  EXPECT_EQ(game.env.state().cars[0].timer, 0);
  game.step(kNoop);
  EXPECT_EQ(game.env.state().cars[0].x, 8);
  // Speed 1 moves every second step: on steps 1, 3 and 5.
  EXPECT_EQ(game.env.state().cars[7].x, 2);
}

TEST(FreewayTest, ACarAlreadyOnTheChickenSendsItBack) {
  Game game;
  State s = calm(3);
  s.cars[2] = Car{4, 2, 2};  // Row 3, on the chicken's column, not moving this step.
  game.env.set_state(s);
  const StepResult result = game.step(kNoop);
  EXPECT_EQ(result.reward, 0.0f);
  EXPECT_FALSE(result.terminated);
  EXPECT_EQ(game.env.state().chicken_y, 9);

  // A car leaving the cell this step still catches the chicken before it moves.
  s.cars[2] = Car{4, 2, 0};
  game.env.set_state(s);
  game.step(kNoop);
  EXPECT_EQ(game.env.state().chicken_y, 9);
  EXPECT_EQ(game.env.state().cars[2].x, 5);
}

TEST(FreewayTest, ACarDrivingOntoTheChickenSendsItBack) {
  Game game;
  State s = calm(3);
  s.cars[2] = Car{5, -4, 0};
  game.env.set_state(s);
  game.step(kNoop);
  EXPECT_EQ(game.env.state().cars[2].x, 4);
  EXPECT_EQ(game.env.state().chicken_y, 9);
  EXPECT_TRUE(game.cell(9, 4, kChicken));

  // Stepping into a car's cell does the same.
  s = calm(4);
  s.cars[2] = Car{4, 5, 5};
  game.env.set_state(s);
  game.step(kUp);
  EXPECT_EQ(game.env.state().chicken_y, 9);

  // A car in the next lane does nothing.
  s = calm(4);
  s.cars[1] = Car{4, 5, 5};
  game.env.set_state(s);
  game.step(kNoop);
  EXPECT_EQ(game.env.state().chicken_y, 4);
}

TEST(FreewayTest, ReachingTheTopScoresAndGivesCarsNewVelocitiesButKeepsTheirColumns) {
  Game game;
  State s = calm(1);
  for (int lane = 0; lane < Freeway::kLanes; ++lane) s.cars[lane] = Car{lane == 4 ? 9 : lane, 5, 5};
  game.env.set_state(s);
  const StepResult result = game.step(kUp);
  EXPECT_EQ(result.reward, 1.0f);
  EXPECT_FALSE(result.terminated);
  EXPECT_EQ(game.env.state().chicken_y, 9);
  EXPECT_EQ(game.env.state().move_timer, 2);
  for (int lane = 0; lane < Freeway::kLanes; ++lane) {
    const Car& car = game.env.state().cars[lane];
    EXPECT_EQ(car.x, lane == 4 ? 9 : lane);
    ASSERT_GE(std::abs(car.speed), 1);
    ASSERT_LE(std::abs(car.speed), 5);
    // The new timer starts at the new speed and has already counted this step.
    EXPECT_EQ(car.timer, std::abs(car.speed) - 1);
  }

  // The new velocities are random: over a few crossings every lane shows more than one.
  std::vector<std::set<int>> seen(Freeway::kLanes);
  for (int crossing = 0; crossing < 20; ++crossing) {
    game.env.set_state(s);
    game.step(kUp);
    for (int lane = 0; lane < Freeway::kLanes; ++lane) seen[lane].insert(game.env.state().cars[lane].speed);
  }
  for (const std::set<int>& speeds : seen) EXPECT_GT(speeds.size(), 1u);
}

TEST(FreewayTest, TheEpisodeEndsOnStep2501) {
  Game game;
  int steps = 0;
  StepResult result;
  // A chicken that never moves stays on row 9, where no car drives.
  do {
    result = game.step(kNoop);
    ++steps;
    ASSERT_EQ(result.reward, 0.0f);
    ASSERT_LE(steps, 2501);
  } while (!result.terminated);
  EXPECT_EQ(steps, 2501);
  EXPECT_EQ(game.env.state().terminate_timer, -1);

  // A finished game stands still.
  const int car_x = game.env.state().cars[0].x;
  result = game.step(kUp);
  EXPECT_TRUE(result.terminated);
  EXPECT_EQ(game.env.state().chicken_y, 9);
  EXPECT_EQ(game.env.state().cars[0].x, car_x);

  State s = calm(9);
  s.terminate_timer = 1;
  game.env.set_state(s);
  EXPECT_FALSE(game.step(kNoop).terminated);
  EXPECT_TRUE(game.step(kNoop).terminated);
}

TEST(FreewayTest, ScoringOnTheLastStepStillPays) {
  Game game;
  State s = calm(1);
  s.terminate_timer = 0;
  game.env.set_state(s);
  const StepResult result = game.step(kUp);
  EXPECT_EQ(result.reward, 1.0f);
  EXPECT_TRUE(result.terminated);
}

TEST(FreewayTest, DifficultyRampingChangesNothing) {
  Freeway with(MinAtarOptions{0.0, true, false});
  Freeway without(MinAtarOptions{0.0, false, false});
  std::vector<uint8_t> a(100 * kChannels);
  std::vector<uint8_t> b(100 * kChannels);
  with.reset(3, a.data());
  without.reset(3, b.data());
  for (int i = 0; i < 300; ++i) {
    const Action act = action(i % 3 == 0 ? kUp : kNoop);
    EXPECT_EQ(with.step(act, a.data()).reward, without.step(act, b.data()).reward);
    ASSERT_EQ(a, b) << "step " << i;
  }
}

TEST(FreewayTest, MinimalActionSetMapsToUpAndDown) {
  Game game(MinAtarOptions{0.0, true, true});
  game.env.set_state(calm(5));
  game.step(1);
  EXPECT_EQ(game.env.last_action(), kUp);
  EXPECT_EQ(game.env.state().chicken_y, 4);
  State s = game.env.state();
  s.move_timer = 0;
  game.env.set_state(s);
  game.step(2);
  EXPECT_EQ(game.env.last_action(), kDown);
  EXPECT_EQ(game.env.state().chicken_y, 5);
}

TEST(FreewayTest, CertainStickinessRepeatsThePreviousAction) {
  // The previous action starts as no-op, so with probability 1 every step is a no-op.
  Game game(MinAtarOptions{1.0, true, false});
  game.env.set_state(calm(9));
  for (int i = 0; i < 4; ++i) {
    game.step(kUp);
    EXPECT_EQ(game.env.state().chicken_y, 9);
    EXPECT_EQ(game.env.last_action(), kNoop);
  }
}

}  // namespace
}  // namespace concord::envs::minatar
