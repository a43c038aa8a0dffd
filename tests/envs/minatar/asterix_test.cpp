// Asterix's rules, each from a fixed state with the expected outcome worked out by hand from
// MinAtar's rules (spawning, the move timer, gold and enemies, the difficulty ramp).
#include "concord/envs/minatar/asterix.h"

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
using Game = testing::GameHarness<Asterix>;
using State = Asterix::State;
using Entity = Asterix::Entity;
constexpr int kChannels = 4;
constexpr int kPlayer = 0;
constexpr int kEnemy = 1;
constexpr int kTrail = 2;
constexpr int kGold = 3;

// The player at (x, y), no entities, and timers far from firing, so nothing spawns or moves
// unless a test sets it up.
State quiet(int x, int y) {
  State s;
  s.player_x = x;
  s.player_y = y;
  s.spawn_timer = 50;
  s.move_timer = 50;
  s.ramp_timer = 50;
  return s;
}

Entity entity(int x, bool moving_right, bool gold) {
  Entity e;
  e.active = true;
  e.x = x;
  e.moving_right = moving_right;
  e.gold = gold;
  return e;
}

TEST(AsterixTest, SpecsOfBothActionSets) {
  Asterix full;
  EXPECT_EQ(full.spec().id, "MinAtar/Asterix-v0");
  EXPECT_EQ(full.spec().observation_space.to_string(), "Box(0, 1, (10, 10, 4), uint8)");
  EXPECT_EQ(full.spec().action_space.to_string(), "Discrete(6)");
  EXPECT_EQ(Asterix::kChannels, 4);

  Asterix minimal(MinAtarOptions{0.1, true, true});
  EXPECT_EQ(minimal.spec().id, "MinAtar/Asterix-v1");
  EXPECT_EQ(minimal.spec().observation_space.to_string(), "Box(0, 1, (10, 10, 4), uint8)");
  EXPECT_EQ(minimal.spec().action_space.to_string(), "Discrete(5)");
  // MinAtar's minimal set drops only fire.
  for (int i = 0; i < 5; ++i) EXPECT_EQ(minimal.full_action(i), i);
}

TEST(AsterixTest, ResetPutsThePlayerInTheMiddleOfAnEmptyField) {
  Game game;
  const State& s = game.env.state();
  EXPECT_EQ(s.player_x, 5);
  EXPECT_EQ(s.player_y, 5);
  for (const Entity& e : s.entities) EXPECT_FALSE(e.active);
  EXPECT_EQ(s.spawn_speed, 10);
  EXPECT_EQ(s.spawn_timer, 10);
  EXPECT_EQ(s.move_speed, 5);
  EXPECT_EQ(s.move_timer, 5);
  EXPECT_EQ(s.ramp_timer, 100);
  EXPECT_EQ(s.ramp_index, 0);
  EXPECT_FALSE(s.terminal);
  EXPECT_TRUE(game.cell(5, 5, kPlayer));
  EXPECT_EQ(game.count(kPlayer) + game.count(kEnemy) + game.count(kTrail) + game.count(kGold), 1);
}

TEST(AsterixTest, PlayerMovesInFourDirectionsBetweenRowsOneAndEight) {
  Game game;
  game.env.set_state(quiet(0, 1));
  game.step(kLeft);
  game.step(kUp);
  EXPECT_EQ(game.env.state().player_x, 0);
  EXPECT_EQ(game.env.state().player_y, 1);
  game.step(kRight);
  game.step(kDown);
  EXPECT_EQ(game.env.state().player_x, 1);
  EXPECT_EQ(game.env.state().player_y, 2);
  game.step(kNoop);
  game.step(kFire);
  EXPECT_EQ(game.env.state().player_x, 1);
  EXPECT_EQ(game.env.state().player_y, 2);
  EXPECT_TRUE(game.cell(2, 1, kPlayer));

  game.env.set_state(quiet(9, 8));
  game.step(kRight);
  game.step(kDown);
  EXPECT_EQ(game.env.state().player_x, 9);
  EXPECT_EQ(game.env.state().player_y, 8);
}

TEST(AsterixTest, FirstSpawnComesOnTheEleventhStepFromAnEdge) {
  Game game;
  // The spawn timer starts at 10 and counts down once per step; the step that finds it at 0
  // spawns and restarts it at the spawn interval, then counts that step too.
  for (int i = 0; i < 10; ++i) {
    game.step(kNoop);
    for (const Entity& e : game.env.state().entities) ASSERT_FALSE(e.active) << "step " << i + 1;
  }
  EXPECT_EQ(game.env.state().spawn_timer, 0);
  game.step(kNoop);
  int spawned = 0;
  for (int slot = 0; slot < Asterix::kSlots; ++slot) {
    const Entity& e = game.env.state().entities[slot];
    if (!e.active) continue;
    ++spawned;
    // Entering from the left means heading right, and the other way round. The move timer,
    // started at 5, also runs out on this step (and on the 6th), so the newcomer has already
    // taken one step in from its edge, leaving its trail on the edge column.
    EXPECT_TRUE(e.x == 1 || e.x == 8);
    EXPECT_EQ(e.moving_right, e.x == 1);
    EXPECT_TRUE(game.cell(slot + 1, e.x, e.gold ? kGold : kEnemy));
    EXPECT_TRUE(game.cell(slot + 1, e.moving_right ? 0 : 9, kTrail));
  }
  EXPECT_EQ(spawned, 1);
  EXPECT_EQ(game.env.state().spawn_timer, 9);
  EXPECT_EQ(game.env.state().move_timer, 4);
  EXPECT_EQ(game.env.state().ramp_timer, 89);
}

TEST(AsterixTest, SpawnsFillOnlyFreeRowsAndFollowMinAtarsOdds) {
  int gold = 0;
  int from_left = 0;
  constexpr int kTrials = 600;
  for (int trial = 0; trial < kTrials; ++trial) {
    Asterix env(deterministic());
    std::vector<uint8_t> obs(100 * kChannels);
    env.reset(static_cast<uint64_t>(trial), obs.data());
    State s = quiet(5, 4);
    for (int slot = 0; slot < Asterix::kSlots; ++slot) {
      if (slot != 3) s.entities[slot] = entity(5, true, true);
    }
    s.spawn_timer = 0;
    env.set_state(s);
    env.step(action(kNoop), obs.data());
    const Entity& e = env.state().entities[3];  // Row 4, the only free one.
    ASSERT_TRUE(e.active);
    ASSERT_TRUE(e.x == 0 || e.x == 9);
    ASSERT_EQ(e.moving_right, e.x == 0);
    gold += e.gold;
    from_left += e.moving_right;
  }
  // Gold one time in three, each side one time in two (bounds are about five standard errors).
  EXPECT_NEAR(gold / static_cast<double>(kTrials), 1.0 / 3.0, 0.1);
  EXPECT_NEAR(from_left / static_cast<double>(kTrials), 0.5, 0.1);
}

TEST(AsterixTest, FullRowsMeanNoSpawnButTheTimerRestarts) {
  Game game;
  State s = quiet(5, 1);
  s.entities[0] = entity(3, true, true);
  for (int slot = 1; slot < Asterix::kSlots; ++slot) s.entities[slot] = entity(slot, slot % 2 == 0, false);
  s.spawn_timer = 0;
  s.spawn_speed = 7;
  game.env.set_state(s);
  game.step(kNoop);
  for (int slot = 0; slot < Asterix::kSlots; ++slot) {
    EXPECT_TRUE(game.env.state().entities[slot].active);
    EXPECT_EQ(game.env.state().entities[slot].x, slot == 0 ? 3 : slot);
  }
  EXPECT_EQ(game.env.state().spawn_timer, 6);
}

TEST(AsterixTest, EntitiesMoveWhenTheMoveTimerRunsOut) {
  Game game;
  State s = quiet(0, 8);
  s.entities[2] = entity(4, /*moving_right=*/true, /*gold=*/false);  // Row 3.
  s.entities[5] = entity(4, /*moving_right=*/false, /*gold=*/true);  // Row 6.
  s.move_timer = 2;
  game.env.set_state(s);
  game.step(kNoop);
  game.step(kNoop);
  EXPECT_EQ(game.env.state().entities[2].x, 4);
  EXPECT_EQ(game.env.state().move_timer, 0);
  game.step(kNoop);  // Finds the timer at 0: everything moves and the timer restarts at 5, then counts.
  EXPECT_EQ(game.env.state().entities[2].x, 5);
  EXPECT_EQ(game.env.state().entities[5].x, 3);
  EXPECT_EQ(game.env.state().move_timer, 4);
  // Each entity's trail marks the cell it came from.
  EXPECT_TRUE(game.cell(3, 5, kEnemy));
  EXPECT_TRUE(game.cell(3, 4, kTrail));
  EXPECT_TRUE(game.cell(6, 3, kGold));
  EXPECT_TRUE(game.cell(6, 4, kTrail));
  EXPECT_EQ(game.count(kEnemy), 1);
  EXPECT_EQ(game.count(kGold), 1);
  EXPECT_EQ(game.count(kTrail), 2);
  EXPECT_TRUE(game.cell(8, 0, kPlayer));
}

TEST(AsterixTest, EntitiesVanishPastTheEdgeAndTrailsStayOnTheGrid) {
  Game game;
  State s = quiet(5, 5);
  s.entities[0] = entity(9, /*moving_right=*/true, /*gold=*/false);
  s.entities[1] = entity(0, /*moving_right=*/false, /*gold=*/true);
  s.entities[6] = entity(0, /*moving_right=*/true, /*gold=*/true);    // Just entered at the left.
  s.entities[7] = entity(9, /*moving_right=*/false, /*gold=*/false);  // Just entered at the right.
  game.env.set_state(s);
  game.step(kNoop);
  // Before anything moves, the entering ones have no trail: the cell behind them is off the grid.
  EXPECT_TRUE(game.cell(7, 0, kGold));
  EXPECT_TRUE(game.cell(8, 9, kEnemy));
  EXPECT_TRUE(game.cell(1, 9, kEnemy));
  EXPECT_TRUE(game.cell(1, 8, kTrail));
  EXPECT_TRUE(game.cell(2, 1, kTrail));
  EXPECT_EQ(game.count(kTrail), 2);

  s.move_timer = 0;
  game.env.set_state(s);
  game.step(kNoop);
  EXPECT_FALSE(game.env.state().entities[0].active);
  EXPECT_FALSE(game.env.state().entities[1].active);
  EXPECT_EQ(game.env.state().entities[6].x, 1);
  EXPECT_EQ(game.env.state().entities[7].x, 8);
  EXPECT_EQ(game.count(kEnemy) + game.count(kGold), 2);
}

TEST(AsterixTest, WalkingOntoGoldPaysOneAndRemovesIt) {
  Game game;
  State s = quiet(5, 5);
  s.entities[4] = entity(6, /*moving_right=*/false, /*gold=*/true);  // Row 5, right of the player.
  game.env.set_state(s);
  const StepResult result = game.step(kRight);
  EXPECT_EQ(result.reward, 1.0f);
  EXPECT_FALSE(result.terminated);
  EXPECT_FALSE(game.env.state().entities[4].active);
  EXPECT_EQ(game.count(kGold), 0);
}

TEST(AsterixTest, GoldWalkingOntoThePlayerPays) {
  Game game;
  State s = quiet(5, 5);
  s.entities[4] = entity(6, /*moving_right=*/false, /*gold=*/true);
  s.move_timer = 0;
  game.env.set_state(s);
  const StepResult result = game.step(kNoop);
  EXPECT_EQ(result.reward, 1.0f);
  EXPECT_FALSE(result.terminated);
  EXPECT_FALSE(game.env.state().entities[4].active);
}

TEST(AsterixTest, WalkingIntoAnEnemyEndsTheEpisode) {
  Game game;
  State s = quiet(5, 5);
  s.entities[3] = entity(5, /*moving_right=*/true, /*gold=*/false);  // Row 4, above the player.
  game.env.set_state(s);
  StepResult result = game.step(kUp);
  EXPECT_TRUE(result.terminated);
  EXPECT_EQ(result.reward, 0.0f);
  EXPECT_TRUE(game.env.state().terminal);
  EXPECT_TRUE(game.env.state().entities[3].active);

  // A finished game stands still.
  result = game.step(kDown);
  EXPECT_TRUE(result.terminated);
  EXPECT_EQ(result.reward, 0.0f);
  EXPECT_EQ(game.env.state().player_y, 4);
  EXPECT_EQ(game.env.state().spawn_timer, 49);
}

TEST(AsterixTest, AnEnemyWalkingOntoThePlayerEndsTheEpisode) {
  Game game;
  State s = quiet(6, 5);
  s.entities[4] = entity(7, /*moving_right=*/false, /*gold=*/false);
  s.move_timer = 0;
  game.env.set_state(s);
  EXPECT_TRUE(game.step(kNoop).terminated);

  // Stepping aside in the same step avoids it: the player moves first.
  s.player_y = 5;
  game.env.set_state(s);
  EXPECT_FALSE(game.step(kDown).terminated);
  EXPECT_EQ(game.env.state().entities[4].x, 6);
}

TEST(AsterixTest, RampShortensSpawnEveryLevelAndMoveEveryOtherLevel) {
  Game game;
  State s = quiet(5, 5);
  s.ramp_timer = 0;
  game.env.set_state(s);
  game.step(kNoop);  // The timer still counts down to -1.
  EXPECT_EQ(game.env.state().ramp_timer, -1);
  EXPECT_EQ(game.env.state().spawn_speed, 10);
  game.step(kNoop);  // Level 0 -> 1: only the spawn interval shrinks.
  EXPECT_EQ(game.env.state().ramp_index, 1);
  EXPECT_EQ(game.env.state().ramp_timer, 100);
  EXPECT_EQ(game.env.state().spawn_speed, 9);
  EXPECT_EQ(game.env.state().move_speed, 5);

  s = game.env.state();
  s.ramp_timer = -1;
  game.env.set_state(s);
  game.step(kNoop);  // Level 1 -> 2: both shrink.
  EXPECT_EQ(game.env.state().ramp_index, 2);
  EXPECT_EQ(game.env.state().spawn_speed, 8);
  EXPECT_EQ(game.env.state().move_speed, 4);

  // The spawn interval stops at 1 while the move interval keeps ramping.
  s = quiet(5, 5);
  s.spawn_speed = 1;
  s.move_speed = 3;
  s.ramp_index = 9;
  s.ramp_timer = -1;
  game.env.set_state(s);
  game.step(kNoop);
  EXPECT_EQ(game.env.state().spawn_speed, 1);
  EXPECT_EQ(game.env.state().move_speed, 2);
  EXPECT_EQ(game.env.state().ramp_index, 10);

  // At full speed the ramp stops, timer included.
  s = quiet(5, 5);
  s.spawn_speed = 1;
  s.move_speed = 1;
  s.ramp_index = 12;
  s.ramp_timer = 40;
  game.env.set_state(s);
  game.step(kNoop);
  EXPECT_EQ(game.env.state().ramp_timer, 40);
  EXPECT_EQ(game.env.state().ramp_index, 12);
}

TEST(AsterixTest, WithoutRampingTheStartingSpeedsStay) {
  Game game(MinAtarOptions{0.0, false, false});
  EXPECT_FALSE(game.env.options().difficulty_ramping);
  State s = quiet(5, 5);
  s.ramp_timer = -1;
  s.ramp_index = 1;
  game.env.set_state(s);
  game.step(kNoop);
  EXPECT_EQ(game.env.state().spawn_speed, 10);
  EXPECT_EQ(game.env.state().move_speed, 5);
  EXPECT_EQ(game.env.state().ramp_index, 1);
  EXPECT_EQ(game.env.state().ramp_timer, -1);
}

TEST(AsterixTest, SpawnTimerRestartsAtTheCurrentInterval) {
  Game game;
  State s = quiet(5, 5);
  s.spawn_speed = 3;
  s.spawn_timer = 0;
  game.env.set_state(s);
  game.step(kNoop);
  EXPECT_EQ(game.env.state().spawn_timer, 2);
}

TEST(AsterixTest, MinimalActionSetKeepsTheFullNumbering) {
  Game game(MinAtarOptions{0.0, true, true});
  game.env.set_state(quiet(5, 5));
  game.step(3);
  EXPECT_EQ(game.env.last_action(), kRight);
  EXPECT_EQ(game.env.state().player_x, 6);
  game.step(4);
  EXPECT_EQ(game.env.last_action(), kDown);
  EXPECT_EQ(game.env.state().player_y, 6);
}

TEST(AsterixTest, CertainStickinessRepeatsThePreviousAction) {
  // The previous action starts as no-op, so with probability 1 every step is a no-op.
  Game game(MinAtarOptions{1.0, true, false});
  game.env.set_state(quiet(5, 5));
  for (int i = 0; i < 3; ++i) {
    game.step(kLeft);
    EXPECT_EQ(game.env.state().player_x, 5);
    EXPECT_EQ(game.env.last_action(), kNoop);
  }
}

}  // namespace
}  // namespace concord::envs::minatar
