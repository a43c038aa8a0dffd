#include "concord/envs/minatar/space_invaders.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <utility>
#include <vector>

#include "envs/minatar/game_harness.h"

namespace concord::envs::minatar {
namespace {

using testing::action;
using testing::deterministic;
using Game = testing::GameHarness<SpaceInvaders>;
using State = SpaceInvaders::State;
using Layer = SpaceInvaders::Layer;

// MinAtar's numbers, written out here rather than read from the class under test.
constexpr int kChannels = 6;
constexpr int kCannonChannel = 0;
constexpr int kAlienChannel = 1;
constexpr int kLeftChannel = 2;
constexpr int kRightChannel = 3;
constexpr int kPlayerShotChannel = 4;
constexpr int kAlienShotChannel = 5;

constexpr int kNoopAction = 0;
constexpr int kLeftAction = 1;
constexpr int kRightAction = 3;
constexpr int kFireAction = 5;

Layer cells(std::initializer_list<std::pair<int, int>> rows_and_columns) {
  Layer layer{};
  for (const auto& [row, column] : rows_and_columns) layer[row][column] = true;
  return layer;
}

// Aliens filling rows [top, top + 4) and columns [left, left + 6).
Layer block(int top, int left) {
  Layer layer{};
  for (int row = top; row < top + 4; ++row) {
    for (int column = left; column < left + 6; ++column) layer[row][column] = true;
  }
  return layer;
}

// Aliens that neither move nor fire for a long while.
State calm(Layer aliens) {
  State s;
  s.aliens = aliens;
  s.alien_move_timer = 100;
  s.alien_shot_timer = 100;
  return s;
}

TEST(SpaceInvadersTest, SpecsAndMinimalActions) {
  const SpaceInvaders full;
  EXPECT_EQ(full.spec().id, "MinAtar/SpaceInvaders-v0");
  EXPECT_EQ(full.spec().observation_space.to_string(), "Box(0, 1, (10, 10, 6), uint8)");
  EXPECT_EQ(full.spec().action_space.to_string(), "Discrete(6)");
  EXPECT_EQ(SpaceInvaders::kChannels, kChannels);

  const SpaceInvaders minimal(MinAtarOptions{0.1, true, true});
  EXPECT_EQ(minimal.spec().id, "MinAtar/SpaceInvaders-v1");
  EXPECT_EQ(minimal.spec().action_space.to_string(), "Discrete(4)");
  // No-op, left, right, fire.
  EXPECT_EQ(minimal.full_action(0), kNoopAction);
  EXPECT_EQ(minimal.full_action(1), kLeftAction);
  EXPECT_EQ(minimal.full_action(2), kRightAction);
  EXPECT_EQ(minimal.full_action(3), kFireAction);
}

TEST(SpaceInvadersTest, MinimalActionIndicesAreMapped) {
  Game game(MinAtarOptions{0.0, true, true});
  game.env.set_state(calm(block(0, 2)));
  game.step(2);  // Right.
  EXPECT_EQ(game.env.state().cannon_x, 6);
  EXPECT_EQ(game.env.last_action(), kRightAction);
  game.step(3);  // Fire.
  EXPECT_TRUE(game.env.state().player_shots[8][6]);
  EXPECT_EQ(game.env.last_action(), kFireAction);
}

TEST(SpaceInvadersTest, ResetShowsTheFirstWaveHeadingLeft) {
  Game game;
  EXPECT_EQ(game.env.state().cannon_x, 5);
  EXPECT_EQ(game.env.state().alien_direction, -1);
  EXPECT_TRUE(game.cell(9, 5, kCannonChannel));
  for (int row = 0; row < 10; ++row) {
    for (int column = 0; column < 10; ++column) {
      const bool alien = row < 4 && column >= 2 && column < 8;
      EXPECT_EQ(game.cell(row, column, kAlienChannel), alien) << row << " " << column;
      EXPECT_EQ(game.cell(row, column, kLeftChannel), alien) << row << " " << column;
    }
  }
  EXPECT_EQ(game.count(kRightChannel), 0);
  EXPECT_EQ(game.count(kCannonChannel) + game.count(kAlienChannel) + game.count(kLeftChannel), 49);
}

TEST(SpaceInvadersTest, FromResetTheWaveFiresOnStepElevenAndMovesOnStepThirteen) {
  Game game;
  for (int t = 1; t <= 10; ++t) {
    game.step(kNoopAction);
    EXPECT_EQ(game.count(kAlienShotChannel), 0) << t;
  }
  game.step(kNoopAction);
  // The lowest alien of the cannon's column fires.
  EXPECT_TRUE(game.cell(3, 5, kAlienShotChannel));
  EXPECT_EQ(game.count(kAlienShotChannel), 1);
  game.step(kNoopAction);
  EXPECT_TRUE(game.cell(4, 5, kAlienShotChannel));
  EXPECT_TRUE(game.cell(0, 2, kAlienChannel));
  game.step(kNoopAction);
  EXPECT_TRUE(game.cell(0, 1, kAlienChannel));
  EXPECT_FALSE(game.cell(0, 7, kAlienChannel));
  EXPECT_EQ(game.env.state().aliens, block(0, 1));
  EXPECT_EQ(game.env.state().alien_move_timer, 11);
}

TEST(SpaceInvadersTest, TheWaveStepsDownAndTurnsAtTheEdge) {
  Game game;
  State s = calm(block(0, 1));
  s.alien_move_timer = 0;
  game.env.set_state(s);
  game.step(kNoopAction);
  EXPECT_EQ(game.env.state().aliens, block(0, 0));
  EXPECT_EQ(game.env.state().alien_direction, -1);

  s = game.env.state();
  s.alien_move_timer = 0;
  game.env.set_state(s);
  game.step(kNoopAction);
  EXPECT_EQ(game.env.state().aliens, block(1, 0));
  EXPECT_EQ(game.env.state().alien_direction, 1);
  EXPECT_EQ(game.count(kLeftChannel), 0);
  EXPECT_EQ(game.count(kRightChannel), 24);
  EXPECT_TRUE(game.cell(4, 5, kRightChannel));

  // Heading right, it now moves right.
  s = game.env.state();
  s.alien_move_timer = 0;
  game.env.set_state(s);
  game.step(kNoopAction);
  EXPECT_EQ(game.env.state().aliens, block(1, 1));

  // And at the right edge it steps down and turns left.
  s = calm(block(2, 4));
  s.alien_direction = 1;
  s.alien_move_timer = 0;
  game.env.set_state(s);
  game.step(kNoopAction);
  EXPECT_EQ(game.env.state().aliens, block(3, 4));
  EXPECT_EQ(game.env.state().alien_direction, -1);
}

TEST(SpaceInvadersTest, AFewAliensMoveMoreOften) {
  Game game;
  State s = calm(cells({{2, 3}, {2, 5}, {4, 7}}));
  s.alien_move_timer = 0;
  game.env.set_state(s);
  game.step(kNoopAction);
  // Three left: the wait is min(3, 12) steps, counted down once this step.
  EXPECT_EQ(game.env.state().alien_move_timer, 2);
  EXPECT_EQ(game.env.state().aliens, cells({{2, 2}, {2, 4}, {4, 6}}));

  // A lone alien moves every step.
  s = calm(cells({{2, 4}}));
  s.alien_move_timer = 0;
  game.env.set_state(s);
  game.step(kNoopAction);
  EXPECT_EQ(game.env.state().aliens, cells({{2, 3}}));
  game.step(kNoopAction);
  EXPECT_EQ(game.env.state().aliens, cells({{2, 2}}));
  EXPECT_EQ(game.env.state().alien_move_timer, 0);
}

TEST(SpaceInvadersTest, TheAlienNearestTheCannonFiresEveryTenSteps) {
  Game game;
  // Columns 4 and 6 are equally near the cannon at 5; the left one wins, and in it the lowest alien.
  State s = calm(cells({{1, 4}, {3, 4}, {2, 6}}));
  s.alien_shot_timer = 0;
  game.env.set_state(s);
  game.step(kNoopAction);
  EXPECT_TRUE(game.env.state().alien_shots[3][4]);
  EXPECT_EQ(game.count(kAlienShotChannel), 1);
  EXPECT_EQ(game.env.state().alien_shot_timer, 9);
  game.step(kNoopAction);
  EXPECT_TRUE(game.cell(4, 4, kAlienShotChannel));
  EXPECT_EQ(game.count(kAlienShotChannel), 1);

  // Nearest by column only: a far-down alien two columns away loses to a high one next door.
  s = calm(cells({{0, 9}, {8, 2}}));
  s.cannon_x = 8;
  s.alien_shot_timer = 0;
  game.env.set_state(s);
  game.step(kNoopAction);
  EXPECT_TRUE(game.env.state().alien_shots[0][9]);
}

TEST(SpaceInvadersTest, PlayerShotsRiseAndDestroyAliens) {
  Game game;
  game.env.set_state(calm(cells({{6, 5}, {0, 0}})));
  StepResult result = game.step(kFireAction);
  EXPECT_EQ(result.reward, 0.0f);
  EXPECT_TRUE(game.cell(8, 5, kPlayerShotChannel));  // Already off the cannon's row.
  EXPECT_EQ(game.env.state().shot_timer, 4);
  result = game.step(kFireAction);  // Reloading: no second shot.
  EXPECT_TRUE(game.cell(7, 5, kPlayerShotChannel));
  EXPECT_EQ(game.count(kPlayerShotChannel), 1);
  EXPECT_EQ(game.env.state().shot_timer, 3);
  result = game.step(kNoopAction);
  EXPECT_EQ(result.reward, 1.0f);
  EXPECT_EQ(game.count(kPlayerShotChannel), 0);
  EXPECT_EQ(game.env.state().aliens, cells({{0, 0}}));

  // A shot leaves through the top.
  State s = calm(cells({{0, 0}}));
  s.player_shots = cells({{0, 3}});
  game.env.set_state(s);
  game.step(kNoopAction);
  EXPECT_EQ(game.count(kPlayerShotChannel), 0);

  // Firing does not move the cannon; moving stops at the walls.
  s = calm(cells({{0, 0}}));
  s.cannon_x = 9;
  game.env.set_state(s);
  game.step(kRightAction);
  EXPECT_EQ(game.env.state().cannon_x, 9);
  game.step(kLeftAction);
  EXPECT_EQ(game.env.state().cannon_x, 8);
}

TEST(SpaceInvadersTest, ClearingAWaveBringsAFasterOne) {
  State s = calm(cells({{2, 5}}));
  s.player_shots = cells({{3, 5}});
  s.alien_move_timer = 5;
  s.alien_direction = 1;
  {
    Game game;
    game.env.set_state(s);
    const StepResult result = game.step(kNoopAction);
    EXPECT_EQ(result.reward, 1.0f);
    EXPECT_FALSE(result.terminated);
    EXPECT_EQ(game.env.state().aliens, block(0, 2));
    EXPECT_EQ(game.env.state().alien_move_interval, 11);
    EXPECT_EQ(game.env.state().ramp_index, 1);
    // The new wave keeps the old heading and timer.
    EXPECT_EQ(game.env.state().alien_direction, 1);
    EXPECT_EQ(game.env.state().alien_move_timer, 4);
    EXPECT_EQ(game.count(kRightChannel), 24);
  }
  {  // Six steps is as fast as waves get.
    Game game;
    State fastest = s;
    fastest.alien_move_interval = 6;
    fastest.ramp_index = 6;
    game.env.set_state(fastest);
    EXPECT_EQ(game.step(kNoopAction).reward, 1.0f);
    EXPECT_EQ(game.env.state().alien_move_interval, 6);
    EXPECT_EQ(game.env.state().ramp_index, 6);
  }
  {  // Without ramping every wave keeps the starting pace.
    Game game(MinAtarOptions{0.0, false, false});
    game.env.set_state(s);
    EXPECT_EQ(game.step(kNoopAction).reward, 1.0f);
    EXPECT_EQ(game.env.state().aliens, block(0, 2));
    EXPECT_EQ(game.env.state().alien_move_interval, 12);
    EXPECT_EQ(game.env.state().ramp_index, 0);
  }
}

TEST(SpaceInvadersTest, DiesWhenHitOrWhenTheAliensLand) {
  {  // An alien shot reaches the cannon.
    Game game;
    State s = calm(block(0, 2));
    s.alien_shots = cells({{8, 5}});
    game.env.set_state(s);
    const StepResult result = game.step(kNoopAction);
    EXPECT_TRUE(result.terminated);
    EXPECT_EQ(result.reward, 0.0f);
  }
  {  // The cannon steps under a landing shot.
    Game game;
    State s = calm(block(0, 2));
    s.alien_shots = cells({{8, 6}});
    game.env.set_state(s);
    EXPECT_TRUE(game.step(kRightAction).terminated);
  }
  {  // A shot landing beside the cannon misses, and is gone.
    Game game;
    State s = calm(block(0, 2));
    s.alien_shots = cells({{8, 6}});
    game.env.set_state(s);
    EXPECT_FALSE(game.step(kNoopAction).terminated);
    game.step(kNoopAction);
    EXPECT_EQ(game.count(kAlienShotChannel), 0);
  }
  {  // An alien in the bottom row walks into the cannon.
    Game game;
    State s = calm(cells({{9, 6}}));
    s.alien_move_timer = 0;
    game.env.set_state(s);
    EXPECT_TRUE(game.step(kNoopAction).terminated);
  }
  {  // An alien at the bottom with the cannon moving under it.
    Game game;
    game.env.set_state(calm(cells({{9, 4}})));
    EXPECT_TRUE(game.step(kLeftAction).terminated);
  }
  {  // The wave reaches the edge on the bottom row and has nowhere to step down to.
    Game game;
    State s = calm(cells({{9, 0}, {8, 1}}));
    s.alien_move_timer = 0;
    game.env.set_state(s);
    const StepResult result = game.step(kNoopAction);
    EXPECT_TRUE(result.terminated);
    // Later steps change nothing.
    const State frozen = game.env.state();
    const StepResult after = game.step(kFireAction);
    EXPECT_TRUE(after.terminated);
    EXPECT_EQ(after.reward, 0.0f);
    EXPECT_EQ(game.env.state().shot_timer, frozen.shot_timer);
    EXPECT_EQ(game.env.state().aliens, frozen.aliens);
  }
}

TEST(SpaceInvadersTest, StickyProbabilityOneRepeatsThePreviousAction) {
  Game game(MinAtarOptions{1.0, true, false});
  game.env.set_state(calm(block(0, 2)));
  for (int64_t a : {kRightAction, kFireAction, kLeftAction}) {
    game.step(a);
    EXPECT_EQ(game.env.last_action(), kNoopAction);
  }
  EXPECT_EQ(game.env.state().cannon_x, 5);
  EXPECT_EQ(game.count(kPlayerShotChannel), 0);
}

}  // namespace
}  // namespace concord::envs::minatar
