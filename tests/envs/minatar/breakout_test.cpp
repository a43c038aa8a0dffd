// Breakout's rules, each from a fixed state with the expected outcome worked out by hand from
// MinAtar's rules (ball moves, wall/brick/paddle bounces, the strike rule, brick refill, losing).
#include "concord/envs/minatar/breakout.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "envs/minatar/game_harness.h"

namespace concord::envs::minatar {
namespace {

using testing::action;
using testing::count;
using testing::deterministic;
using testing::lit;
using Game = testing::GameHarness<Breakout>;
using State = Breakout::State;
constexpr int kChannels = 4;
constexpr int kPaddle = 0;
constexpr int kBall = 1;
constexpr int kTrail = 2;
constexpr int kBrick = 3;

// A mid-game state with no bricks, the ball at (x, y) heading `dir`, the paddle at `paddle`.
State open_field(int x, int y, int dir, int paddle = 4) {
  State s;
  s.ball_x = x;
  s.ball_y = y;
  s.ball_dir = dir;
  s.last_x = x;
  s.last_y = y;
  s.paddle_x = paddle;
  s.bricks = {};
  return s;
}

void fill_start_rows(State& s) {
  for (int row = 1; row <= 3; ++row) s.bricks[row].fill(true);
}

TEST(BreakoutTest, SpecsOfBothActionSets) {
  Breakout full;
  EXPECT_EQ(full.spec().id, "MinAtar/Breakout-v0");
  EXPECT_EQ(full.spec().observation_space.to_string(), "Box(0, 1, (10, 10, 4), uint8)");
  EXPECT_EQ(full.spec().action_space.to_string(), "Discrete(6)");
  EXPECT_EQ(Breakout::kChannels, 4);

  Breakout minimal(MinAtarOptions{0.1, true, true});
  EXPECT_EQ(minimal.spec().id, "MinAtar/Breakout-v1");
  EXPECT_EQ(minimal.spec().observation_space.to_string(), "Box(0, 1, (10, 10, 4), uint8)");
  EXPECT_EQ(minimal.spec().action_space.to_string(), "Discrete(3)");
  // MinAtar's minimal set: no-op, left, right.
  EXPECT_EQ(minimal.full_action(0), kNoop);
  EXPECT_EQ(minimal.full_action(1), kLeft);
  EXPECT_EQ(minimal.full_action(2), kRight);
}

TEST(BreakoutTest, ResetStartsTheBallInATopCornerHeadingDown) {
  bool seen_left = false;
  bool seen_right = false;
  for (uint64_t seed = 0; seed < 40; ++seed) {
    Breakout env(deterministic());
    std::vector<uint8_t> obs(100 * kChannels);
    env.reset(seed, obs.data());
    const State& s = env.state();
    EXPECT_EQ(s.ball_y, 3);
    if (s.ball_x == 0) {
      seen_left = true;
      EXPECT_EQ(s.ball_dir, Breakout::kDownRight);
    } else {
      ASSERT_EQ(s.ball_x, 9);
      seen_right = true;
      EXPECT_EQ(s.ball_dir, Breakout::kDownLeft);
    }
    EXPECT_EQ(s.last_x, s.ball_x);
    EXPECT_EQ(s.last_y, 3);
    EXPECT_EQ(s.paddle_x, 4);
    EXPECT_FALSE(s.strike);
    EXPECT_FALSE(s.terminal);
    for (int row = 0; row < 10; ++row) {
      for (int column = 0; column < 10; ++column) {
        EXPECT_EQ(s.bricks[row][column], row >= 1 && row <= 3);
        EXPECT_EQ(lit(obs, kChannels, row, column, kBrick), row >= 1 && row <= 3);
      }
    }
    EXPECT_TRUE(lit(obs, kChannels, 9, 4, kPaddle));
    EXPECT_TRUE(lit(obs, kChannels, 3, s.ball_x, kBall));
    EXPECT_TRUE(lit(obs, kChannels, 3, s.ball_x, kTrail));  // Before any move the trail sits under the ball.
    EXPECT_EQ(count(obs, kChannels, kPaddle) + count(obs, kChannels, kBall) + count(obs, kChannels, kTrail), 3);
  }
  EXPECT_TRUE(seen_left);
  EXPECT_TRUE(seen_right);
}

TEST(BreakoutTest, BallMovesDiagonallyAndLeavesATrail) {
  Game game;
  game.env.set_state(open_field(5, 5, Breakout::kDownLeft));
  const StepResult result = game.step(kNoop);
  EXPECT_EQ(result.reward, 0.0f);
  EXPECT_FALSE(result.terminated);
  EXPECT_EQ(game.env.state().ball_x, 4);
  EXPECT_EQ(game.env.state().ball_y, 6);
  EXPECT_TRUE(game.cell(6, 4, kBall));
  EXPECT_TRUE(game.cell(5, 5, kTrail));
  EXPECT_EQ(game.count(kBall), 1);
  EXPECT_EQ(game.count(kTrail), 1);
  EXPECT_EQ(game.count(kBrick), 0);
}

TEST(BreakoutTest, SideWallHoldsTheBallOnTheEdgeColumnAndReversesIt) {
  Game game;
  game.env.set_state(open_field(1, 5, Breakout::kUpLeft));
  game.step(kNoop);  // (1, 5) -> (0, 4): reaching column 0 is not yet a bounce.
  EXPECT_EQ(game.env.state().ball_x, 0);
  EXPECT_EQ(game.env.state().ball_y, 4);
  EXPECT_EQ(game.env.state().ball_dir, Breakout::kUpLeft);
  game.step(kNoop);  // Column -1 is clamped to 0: the ball only rises, now heading up-right.
  EXPECT_EQ(game.env.state().ball_x, 0);
  EXPECT_EQ(game.env.state().ball_y, 3);
  EXPECT_EQ(game.env.state().ball_dir, Breakout::kUpRight);
  game.step(kNoop);
  EXPECT_EQ(game.env.state().ball_x, 1);
  EXPECT_EQ(game.env.state().ball_y, 2);

  game.env.set_state(open_field(9, 6, Breakout::kDownRight));
  game.step(kNoop);
  EXPECT_EQ(game.env.state().ball_x, 9);
  EXPECT_EQ(game.env.state().ball_y, 7);
  EXPECT_EQ(game.env.state().ball_dir, Breakout::kDownLeft);
}

TEST(BreakoutTest, CeilingHoldsTheBallOnRowZeroAndSendsItDown) {
  Game game;
  game.env.set_state(open_field(4, 1, Breakout::kUpRight));
  game.step(kNoop);
  EXPECT_EQ(game.env.state().ball_x, 5);
  EXPECT_EQ(game.env.state().ball_y, 0);
  game.step(kNoop);  // Row -1 is clamped to 0: the ball slides right and turns down.
  EXPECT_EQ(game.env.state().ball_x, 6);
  EXPECT_EQ(game.env.state().ball_y, 0);
  EXPECT_EQ(game.env.state().ball_dir, Breakout::kDownRight);
  game.step(kNoop);
  EXPECT_EQ(game.env.state().ball_x, 7);
  EXPECT_EQ(game.env.state().ball_y, 1);
}

TEST(BreakoutTest, BreakingABrickPaysOneAndTurnsTheBallBack) {
  Game game;
  State s = open_field(5, 4, Breakout::kUpLeft);
  fill_start_rows(s);
  game.env.set_state(s);
  StepResult result = game.step(kNoop);
  // The ball aimed at (4, 3): that brick goes, the ball stays on row 4 and now heads down-left.
  EXPECT_EQ(result.reward, 1.0f);
  EXPECT_FALSE(result.terminated);
  EXPECT_FALSE(game.env.state().bricks[3][4]);
  EXPECT_FALSE(game.cell(3, 4, kBrick));
  EXPECT_EQ(game.count(kBrick), 29);
  EXPECT_EQ(game.env.state().ball_x, 4);
  EXPECT_EQ(game.env.state().ball_y, 4);
  EXPECT_EQ(game.env.state().ball_dir, Breakout::kDownLeft);
  EXPECT_TRUE(game.env.state().strike);
  EXPECT_TRUE(game.cell(4, 5, kTrail));

  result = game.step(kNoop);  // Into open space: the strike mark clears.
  EXPECT_EQ(result.reward, 0.0f);
  EXPECT_EQ(game.env.state().ball_x, 3);
  EXPECT_EQ(game.env.state().ball_y, 5);
  EXPECT_FALSE(game.env.state().strike);
}

TEST(BreakoutTest, RightAfterAStrikeTheBallEntersABrickWithoutBreakingIt) {
  Game game;
  State s = open_field(5, 4, Breakout::kUpLeft);
  s.bricks[3][4] = true;
  s.strike = true;
  game.env.set_state(s);
  StepResult result = game.step(kNoop);
  EXPECT_EQ(result.reward, 0.0f);
  EXPECT_TRUE(game.env.state().bricks[3][4]);
  EXPECT_EQ(game.env.state().ball_x, 4);
  EXPECT_EQ(game.env.state().ball_y, 3);
  EXPECT_EQ(game.env.state().ball_dir, Breakout::kUpLeft);
  EXPECT_TRUE(game.env.state().strike);
  EXPECT_TRUE(game.cell(3, 4, kBall));
  EXPECT_TRUE(game.cell(3, 4, kBrick));

  result = game.step(kNoop);  // (3, 2) is empty: the mark clears.
  EXPECT_EQ(result.reward, 0.0f);
  EXPECT_FALSE(game.env.state().strike);
  EXPECT_EQ(game.env.state().ball_x, 3);
  EXPECT_EQ(game.env.state().ball_y, 2);
}

TEST(BreakoutTest, PaddleUnderTheBallSendsItBackUpTheSameWay) {
  Game game;
  game.env.set_state(open_field(4, 8, Breakout::kDownRight, /*paddle=*/4));
  const StepResult result = game.step(kNoop);
  EXPECT_FALSE(result.terminated);
  EXPECT_EQ(result.reward, 0.0f);
  // Aimed at (5, 9); the ball keeps its column move but stays on row 8, heading up-right.
  EXPECT_EQ(game.env.state().ball_x, 5);
  EXPECT_EQ(game.env.state().ball_y, 8);
  EXPECT_EQ(game.env.state().ball_dir, Breakout::kUpRight);
}

TEST(BreakoutTest, PaddleWhereTheBallLandsSendsItBackWhereItCameFrom) {
  Game game;
  game.env.set_state(open_field(3, 8, Breakout::kDownRight, /*paddle=*/4));
  game.step(kNoop);
  EXPECT_FALSE(game.env.state().terminal);
  EXPECT_EQ(game.env.state().ball_x, 4);
  EXPECT_EQ(game.env.state().ball_y, 8);
  EXPECT_EQ(game.env.state().ball_dir, Breakout::kUpLeft);

  game.env.set_state(open_field(6, 8, Breakout::kDownLeft, /*paddle=*/5));
  game.step(kNoop);
  EXPECT_FALSE(game.env.state().terminal);
  EXPECT_EQ(game.env.state().ball_dir, Breakout::kUpRight);
}

TEST(BreakoutTest, ThePaddleMovesBeforeTheBall) {
  Game game;
  // With the paddle still at 3 the ball would land beside it; moving right first catches it.
  game.env.set_state(open_field(3, 8, Breakout::kDownRight, /*paddle=*/3));
  game.step(kRight);
  EXPECT_EQ(game.env.state().paddle_x, 4);
  EXPECT_FALSE(game.env.state().terminal);
  EXPECT_EQ(game.env.state().ball_dir, Breakout::kUpLeft);
}

TEST(BreakoutTest, MissingTheBallEndsTheEpisode) {
  Game game;
  game.env.set_state(open_field(1, 8, Breakout::kDownRight, /*paddle=*/4));
  StepResult result = game.step(kNoop);
  EXPECT_TRUE(result.terminated);
  EXPECT_EQ(result.reward, 0.0f);
  EXPECT_EQ(game.env.state().ball_x, 2);
  EXPECT_EQ(game.env.state().ball_y, 9);
  EXPECT_TRUE(game.cell(9, 2, kBall));

  // Stepping a finished game changes nothing and keeps reporting the end.
  result = game.step(kLeft);
  EXPECT_TRUE(result.terminated);
  EXPECT_EQ(result.reward, 0.0f);
  EXPECT_EQ(game.env.state().paddle_x, 4);
  EXPECT_EQ(game.env.state().ball_x, 2);
}

TEST(BreakoutTest, PaddleMovesOnlyLeftAndRightWithinTheGrid) {
  Game game;
  game.env.set_state(open_field(5, 4, Breakout::kUpRight, /*paddle=*/0));
  game.step(kLeft);
  EXPECT_EQ(game.env.state().paddle_x, 0);
  game.step(kRight);
  EXPECT_EQ(game.env.state().paddle_x, 1);
  for (const int still : {kNoop, kUp, kDown, kFire}) {
    game.step(still);
    EXPECT_EQ(game.env.state().paddle_x, 1);
  }
  EXPECT_TRUE(game.cell(9, 1, kPaddle));
  EXPECT_EQ(game.count(kPaddle), 1);

  game.env.set_state(open_field(5, 4, Breakout::kUpRight, /*paddle=*/9));
  game.step(kRight);
  EXPECT_EQ(game.env.state().paddle_x, 9);
}

TEST(BreakoutTest, BricksComeBackWhenAnEmptyWallMeetsTheBallAtTheBottom) {
  Game game;
  // Breaking the last brick does not refill the wall by itself.
  State s = open_field(5, 4, Breakout::kUpLeft);
  s.bricks[3][4] = true;
  game.env.set_state(s);
  EXPECT_EQ(game.step(kNoop).reward, 1.0f);
  EXPECT_EQ(game.count(kBrick), 0);

  // Reaching the bottom row with no bricks left brings back rows 1-3, caught or not.
  game.env.set_state(open_field(1, 8, Breakout::kDownRight, /*paddle=*/2));
  game.step(kNoop);
  EXPECT_FALSE(game.env.state().terminal);
  EXPECT_EQ(game.count(kBrick), 30);
  for (int column = 0; column < 10; ++column) {
    EXPECT_TRUE(game.env.state().bricks[1][column]);
    EXPECT_TRUE(game.env.state().bricks[3][column]);
    EXPECT_FALSE(game.env.state().bricks[4][column]);
  }

  game.env.set_state(open_field(1, 8, Breakout::kDownRight, /*paddle=*/7));
  EXPECT_TRUE(game.step(kNoop).terminated);
  EXPECT_EQ(game.count(kBrick), 30);

  // One brick left: no refill.
  s = open_field(1, 8, Breakout::kDownRight, /*paddle=*/2);
  s.bricks[2][6] = true;
  game.env.set_state(s);
  game.step(kNoop);
  EXPECT_EQ(game.count(kBrick), 1);
}

TEST(BreakoutTest, MinimalActionSetMapsToLeftAndRight) {
  Game game(MinAtarOptions{0.0, true, true});
  game.env.set_state(open_field(5, 4, Breakout::kUpRight, /*paddle=*/4));
  game.step(2);
  EXPECT_EQ(game.env.last_action(), kRight);
  EXPECT_EQ(game.env.state().paddle_x, 5);
  game.step(1);
  EXPECT_EQ(game.env.last_action(), kLeft);
  EXPECT_EQ(game.env.state().paddle_x, 4);
  game.step(0);
  EXPECT_EQ(game.env.last_action(), kNoop);
  EXPECT_EQ(game.env.state().paddle_x, 4);
}

TEST(BreakoutTest, CertainStickinessRepeatsThePreviousAction) {
  // The previous action starts as no-op, so with probability 1 every step is a no-op.
  Game game(MinAtarOptions{1.0, true, false});
  game.env.set_state(open_field(5, 4, Breakout::kUpRight, /*paddle=*/4));
  for (int i = 0; i < 3; ++i) {
    game.step(kRight);
    EXPECT_EQ(game.env.state().paddle_x, 4);
    EXPECT_EQ(game.env.last_action(), kNoop);
  }
}

}  // namespace
}  // namespace concord::envs::minatar
