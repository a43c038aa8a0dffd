#include "concord/envs/minatar/seaquest.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "concord/core/rng.h"

#include "envs/minatar/game_harness.h"

namespace concord::envs::minatar {
namespace {

using testing::action;
using testing::deterministic;
using Game = testing::GameHarness<Seaquest>;
using State = Seaquest::State;
using Swimmer = Seaquest::Swimmer;
using EnemySub = Seaquest::EnemySub;
using Torpedo = Seaquest::Torpedo;

// MinAtar's numbers, written out here rather than read from the class under test.
constexpr int kChannels = 10;
constexpr int kFrontChannel = 0;
constexpr int kBackChannel = 1;
constexpr int kPlayerTorpedoChannel = 2;
constexpr int kTrailChannel = 3;
constexpr int kEnemyTorpedoChannel = 4;
constexpr int kFishChannel = 5;
constexpr int kEnemySubChannel = 6;
constexpr int kOxygenChannel = 7;
constexpr int kDiverGaugeChannel = 8;
constexpr int kDiverChannel = 9;

constexpr int kNoopAction = 0;
constexpr int kLeftAction = 1;
constexpr int kUpAction = 2;
constexpr int kRightAction = 3;
constexpr int kDownAction = 4;
constexpr int kFireAction = 5;

// A player under water with nothing around and no spawn due for a long while.
State quiet(int x, int y) {
  State s;
  s.sub_x = x;
  s.sub_y = y;
  s.surfaced = y == 0;
  s.enemy_spawn_timer = 100;
  s.diver_spawn_timer = 100;
  return s;
}

TEST(SeaquestTest, SpecsAndMinimalActions) {
  const Seaquest full;
  EXPECT_EQ(full.spec().id, "MinAtar/Seaquest-v0");
  EXPECT_EQ(full.spec().observation_space.to_string(), "Box(0, 1, (10, 10, 10), uint8)");
  EXPECT_EQ(full.spec().action_space.to_string(), "Discrete(6)");
  EXPECT_EQ(Seaquest::kChannels, kChannels);

  // Every action matters in Seaquest, so the minimal set is the full one, in the same order.
  const Seaquest minimal(MinAtarOptions{0.1, true, true});
  EXPECT_EQ(minimal.spec().id, "MinAtar/Seaquest-v1");
  EXPECT_EQ(minimal.spec().action_space.to_string(), "Discrete(6)");
  for (int k = 0; k < 6; ++k) EXPECT_EQ(minimal.full_action(k), k);
}

TEST(SeaquestTest, ResetStartsAtTheSurfaceWithAFullTank) {
  Game game;
  const State& s = game.env.state();
  EXPECT_EQ(s.sub_x, 5);
  EXPECT_EQ(s.sub_y, 0);
  EXPECT_FALSE(s.sub_facing_right);
  EXPECT_EQ(s.oxygen, 200);
  EXPECT_EQ(s.diver_count, 0);
  EXPECT_EQ(s.enemy_spawn_timer, 20);
  EXPECT_EQ(s.diver_spawn_timer, 30);
  EXPECT_EQ(s.move_speed, 5);
  EXPECT_TRUE(s.surfaced);
  // Facing left, so the back is to the right of the front.
  EXPECT_TRUE(game.cell(0, 5, kFrontChannel));
  EXPECT_TRUE(game.cell(0, 6, kBackChannel));
  for (int x = 0; x < 10; ++x) EXPECT_TRUE(game.cell(9, x, kOxygenChannel)) << x;
  EXPECT_EQ(game.count(kDiverGaugeChannel), 0);
  int total = 0;
  for (uint8_t v : game.obs) total += v;
  EXPECT_EQ(total, 12);
}

TEST(SeaquestTest, OxygenDrainsUnderWaterAndRunsOut) {
  Game game;
  State s = quiet(5, 4);
  s.oxygen = 101;
  game.env.set_state(s);
  game.step(kNoopAction);
  EXPECT_EQ(game.env.state().oxygen, 100);
  EXPECT_EQ(game.count(kOxygenChannel), 5);  // 100 * 10 / 200 cells, from column 0.
  EXPECT_TRUE(game.cell(9, 4, kOxygenChannel));
  game.step(kNoopAction);
  EXPECT_EQ(game.count(kOxygenChannel), 4);  // 99 * 10 / 200 rounds down.

  s.oxygen = 2;
  game.env.set_state(s);
  EXPECT_FALSE(game.step(kNoopAction).terminated);  // 1 left.
  EXPECT_EQ(game.count(kOxygenChannel), 0);
  EXPECT_FALSE(game.step(kNoopAction).terminated);  // Empty, but the check came before the breath.
  EXPECT_EQ(game.env.state().oxygen, 0);
  EXPECT_EQ(game.count(kOxygenChannel), 0);
  const StepResult last = game.step(kNoopAction);
  EXPECT_TRUE(last.terminated);
  EXPECT_EQ(last.reward, 0.0f);
  // The gauge stays empty rather than showing the overdrawn tank.
  EXPECT_EQ(game.count(kOxygenChannel), 0);
}

TEST(SeaquestTest, NoOxygenIsUsedAtTheSurface) {
  Game game;
  State s = quiet(5, 0);
  s.oxygen = 150;
  game.env.set_state(s);
  for (int t = 0; t < 3; ++t) EXPECT_FALSE(game.step(kNoopAction).terminated);
  EXPECT_EQ(game.env.state().oxygen, 150);
}

TEST(SeaquestTest, SurfacingWithDiversRefillsOxygenForOneDiverAndRamps) {
  Game game;
  State s = quiet(5, 1);
  s.oxygen = 50;
  s.diver_count = 3;
  game.env.set_state(s);
  StepResult result = game.step(kUpAction);
  EXPECT_FALSE(result.terminated);
  EXPECT_EQ(result.reward, 0.0f);
  EXPECT_EQ(game.env.state().sub_y, 0);
  EXPECT_EQ(game.env.state().oxygen, 200);
  EXPECT_EQ(game.env.state().diver_count, 2);
  EXPECT_TRUE(game.env.state().surfaced);
  // The first ramp step (index 0, even) speeds up spawning only.
  EXPECT_EQ(game.env.state().enemy_spawn_speed, 19);
  EXPECT_EQ(game.env.state().move_speed, 5);
  EXPECT_EQ(game.env.state().ramp_index, 1);
  // Two divers fill columns 7 and 8 of the bottom row.
  EXPECT_EQ(game.count(kDiverGaugeChannel), 2);
  EXPECT_TRUE(game.cell(9, 7, kDiverGaugeChannel));
  EXPECT_TRUE(game.cell(9, 8, kDiverGaugeChannel));

  // Staying up does not surface again.
  game.step(kNoopAction);
  EXPECT_EQ(game.env.state().diver_count, 2);
  EXPECT_EQ(game.env.state().ramp_index, 1);

  game.step(kDownAction);
  EXPECT_EQ(game.env.state().oxygen, 199);
  EXPECT_FALSE(game.env.state().surfaced);
  result = game.step(kUpAction);
  EXPECT_FALSE(result.terminated);
  EXPECT_EQ(game.env.state().oxygen, 200);
  EXPECT_EQ(game.env.state().diver_count, 1);
  // The second (index 1, odd) also makes enemies faster.
  EXPECT_EQ(game.env.state().enemy_spawn_speed, 18);
  EXPECT_EQ(game.env.state().move_speed, 4);
  EXPECT_EQ(game.env.state().ramp_index, 2);
}

TEST(SeaquestTest, RampingStopsAtItsLimitsAndCanBeTurnedOff) {
  {
    Game game;
    State s = quiet(5, 1);
    s.diver_count = 3;
    s.move_speed = 3;
    s.enemy_spawn_speed = 2;
    s.ramp_index = 1;
    game.env.set_state(s);
    game.step(kUpAction);
    EXPECT_EQ(game.env.state().move_speed, 2);
    EXPECT_EQ(game.env.state().enemy_spawn_speed, 1);
    EXPECT_EQ(game.env.state().ramp_index, 2);
    game.step(kDownAction);
    game.step(kUpAction);
    EXPECT_EQ(game.env.state().diver_count, 1);
    EXPECT_EQ(game.env.state().move_speed, 2);
    EXPECT_EQ(game.env.state().enemy_spawn_speed, 1);
    EXPECT_EQ(game.env.state().ramp_index, 2);  // Nothing left to ramp, so the index stays.
  }
  {
    Game game(MinAtarOptions{0.0, false, false});
    State s = quiet(5, 1);
    s.diver_count = 3;
    s.ramp_index = 1;
    game.env.set_state(s);
    game.step(kUpAction);
    EXPECT_EQ(game.env.state().diver_count, 2);
    EXPECT_EQ(game.env.state().oxygen, 200);
    EXPECT_EQ(game.env.state().move_speed, 5);
    EXPECT_EQ(game.env.state().enemy_spawn_speed, 20);
    EXPECT_EQ(game.env.state().ramp_index, 1);
  }
}

TEST(SeaquestTest, SurfacingWithSixDiversPaysTheOxygenGauge) {
  Game game;
  State s = quiet(5, 1);
  s.oxygen = 159;
  s.diver_count = 6;
  game.env.set_state(s);
  const StepResult result = game.step(kUpAction);
  EXPECT_FALSE(result.terminated);
  EXPECT_EQ(result.reward, 7.0f);  // 159 * 10 / 200 = 7.95, whole cells only.
  EXPECT_EQ(game.env.state().oxygen, 200);
  // MinAtar empties the boat and then still takes the diver every surfacing costs.
  EXPECT_EQ(game.env.state().diver_count, -1);
  EXPECT_EQ(game.count(kDiverGaugeChannel), 0);
}

TEST(SeaquestTest, SurfacingWithoutDiversEndsTheEpisode) {
  Game game;
  game.env.set_state(quiet(5, 1));
  StepResult result = game.step(kUpAction);
  EXPECT_TRUE(result.terminated);
  EXPECT_EQ(result.reward, 0.0f);
  EXPECT_EQ(game.env.state().oxygen, 200);  // Not refilled, and none was used on the surface.
  // Once over, steps change nothing.
  result = game.step(kDownAction);
  EXPECT_TRUE(result.terminated);
  EXPECT_EQ(result.reward, 0.0f);
  EXPECT_EQ(game.env.state().sub_y, 0);
}

TEST(SeaquestTest, DiversArePickedUpUntilTheBoatIsFull) {
  Game game;
  State s = quiet(4, 3);
  s.divers = {Swimmer{4, 3, true, 2},    // Under the player: taken at once.
              Swimmer{3, 5, true, 0},    // Drifts right now.
              Swimmer{9, 6, true, 0},    // Drifts off the grid.
              Swimmer{6, 7, false, 1}};  // Waits.
  game.env.set_state(s);
  game.step(kNoopAction);
  const State& after = game.env.state();
  EXPECT_EQ(after.diver_count, 1);
  ASSERT_EQ(after.divers.size(), 2u);
  EXPECT_EQ(after.divers[0].x, 4);
  EXPECT_EQ(after.divers[0].move_timer, 5);
  EXPECT_EQ(after.divers[1].x, 6);
  EXPECT_EQ(after.divers[1].move_timer, 0);
  EXPECT_TRUE(game.cell(5, 4, kDiverChannel));
  EXPECT_TRUE(game.cell(5, 3, kTrailChannel));  // Behind a diver heading right.
  EXPECT_TRUE(game.cell(7, 6, kDiverChannel));
  EXPECT_TRUE(game.cell(7, 7, kTrailChannel));

  // A diver drifting onto the player is taken too.
  s = quiet(4, 3);
  s.divers = {Swimmer{3, 3, true, 0}};
  game.env.set_state(s);
  game.step(kNoopAction);
  EXPECT_EQ(game.env.state().diver_count, 1);
  EXPECT_TRUE(game.env.state().divers.empty());

  // With six on board divers swim past.
  s = quiet(4, 3);
  s.diver_count = 6;
  s.divers = {Swimmer{4, 3, true, 2}};
  game.env.set_state(s);
  game.step(kNoopAction);
  EXPECT_EQ(game.env.state().diver_count, 6);
  ASSERT_EQ(game.env.state().divers.size(), 1u);
  EXPECT_EQ(game.env.state().divers[0].move_timer, 1);
  EXPECT_EQ(game.count(kDiverGaugeChannel), 6);  // Columns 3-8.
  EXPECT_TRUE(game.cell(9, 3, kDiverGaugeChannel));
  EXPECT_FALSE(game.cell(9, 9, kDiverGaugeChannel));
}

// The draws a spawn makes, in MinAtar's order, from the generator the env was seeded with. The
// first draw of every step is the sticky-action coin, taken even with probability 0.
struct EnemyDraw {
  bool from_left;
  bool is_sub;
  int row;
};

EnemyDraw expected_enemy(uint64_t seed) {
  core::Rng rng(seed);
  core::uniform(rng, 0.0, 1.0);
  EnemyDraw draw;
  draw.from_left = core::uniform(rng, 0.0, 1.0) < 0.5;
  draw.is_sub = core::uniform(rng, 0.0, 1.0) < 1.0 / 3.0;
  draw.row = 1 + static_cast<int>(core::uniform_index(rng, 8));
  return draw;
}

TEST(SeaquestTest, EnemiesSpawnWhenTheirTimerRunsOut) {
  bool saw_fish = false;
  bool saw_sub = false;
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    SCOPED_TRACE(seed);
    Game game(deterministic(), seed);
    State s = quiet(5, 0);
    s.enemy_spawn_timer = 0;
    s.enemy_spawn_speed = 17;
    s.move_speed = 4;
    game.env.set_state(s);
    game.step(kNoopAction);
    const EnemyDraw draw = expected_enemy(seed);
    const State& after = game.env.state();
    EXPECT_EQ(after.enemy_spawn_timer, 16);  // Rewound to the spawn interval, then counted down.
    const int x = draw.from_left ? 0 : 9;
    if (draw.is_sub) {
      saw_sub = true;
      ASSERT_EQ(after.enemy_subs.size(), 1u);
      EXPECT_TRUE(after.fish.empty());
      const EnemySub& sub = after.enemy_subs[0];
      EXPECT_EQ(sub.x, x);
      EXPECT_EQ(sub.y, draw.row);
      EXPECT_EQ(sub.moving_right, draw.from_left);
      EXPECT_EQ(sub.move_timer, 3);  // Starts at the move speed and counts in its first step.
      EXPECT_EQ(sub.shot_timer, 9);
      EXPECT_TRUE(game.cell(draw.row, x, kEnemySubChannel));
    } else {
      saw_fish = true;
      ASSERT_EQ(after.fish.size(), 1u);
      EXPECT_TRUE(after.enemy_subs.empty());
      const Swimmer& fish = after.fish[0];
      EXPECT_EQ(fish.x, x);
      EXPECT_EQ(fish.y, draw.row);
      EXPECT_EQ(fish.moving_right, draw.from_left);
      EXPECT_EQ(fish.move_timer, 3);
      EXPECT_TRUE(game.cell(draw.row, x, kFishChannel));
    }
    // The trail would lie off the grid at the entry column.
    EXPECT_EQ(game.count(kTrailChannel), 0);
  }
  EXPECT_TRUE(saw_fish);
  EXPECT_TRUE(saw_sub);
}

TEST(SeaquestTest, NoEnemySpawnsIntoARowWithOneHeadingTheOtherWay) {
  Game game;
  State s = quiet(5, 0);
  s.enemy_spawn_timer = 0;
  for (int row = 1; row <= 8; ++row) {
    s.fish.push_back(Swimmer{3, row, true, 50});
    s.fish.push_back(Swimmer{6, row, false, 50});
  }
  game.env.set_state(s);
  game.step(kNoopAction);
  EXPECT_EQ(game.env.state().fish.size(), 16u);
  EXPECT_TRUE(game.env.state().enemy_subs.empty());
  EXPECT_EQ(game.env.state().enemy_spawn_timer, 19);  // The attempt still rewinds the timer.
}

TEST(SeaquestTest, DiversSpawnEveryThirtySteps) {
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    SCOPED_TRACE(seed);
    Game game(deterministic(), seed);
    State s = quiet(5, 0);
    s.diver_spawn_timer = 0;
    game.env.set_state(s);
    game.step(kNoopAction);
    core::Rng rng(seed);
    core::uniform(rng, 0.0, 1.0);  // Sticky coin.
    const bool from_left = core::uniform(rng, 0.0, 1.0) < 0.5;
    const int row = 1 + static_cast<int>(core::uniform_index(rng, 8));
    const State& after = game.env.state();
    EXPECT_EQ(after.diver_spawn_timer, 29);
    ASSERT_EQ(after.divers.size(), 1u);
    EXPECT_EQ(after.divers[0].x, from_left ? 0 : 9);
    EXPECT_EQ(after.divers[0].y, row);
    EXPECT_EQ(after.divers[0].moving_right, from_left);
    EXPECT_EQ(after.divers[0].move_timer, 4);
  }
}

TEST(SeaquestTest, SpawnTimersCountDown) {
  Game game;
  State s = quiet(5, 0);
  s.enemy_spawn_timer = 5;
  s.diver_spawn_timer = 1;
  game.env.set_state(s);
  game.step(kNoopAction);
  EXPECT_EQ(game.env.state().enemy_spawn_timer, 4);
  EXPECT_EQ(game.env.state().diver_spawn_timer, 0);
  EXPECT_TRUE(game.env.state().divers.empty());  // Spawns on the step that finds it at zero.
}

TEST(SeaquestTest, EnemySubsFireEveryTenSteps) {
  Game game;
  State s = quiet(7, 6);
  s.enemy_subs = {EnemySub{2, 4, false, 3, 0}};
  game.env.set_state(s);
  game.step(kNoopAction);
  State after = game.env.state();
  ASSERT_EQ(after.enemy_torpedoes.size(), 1u);
  // Fired from the sub's cell and already one cell on its way.
  EXPECT_EQ(after.enemy_torpedoes[0].x, 1);
  EXPECT_EQ(after.enemy_torpedoes[0].y, 4);
  EXPECT_FALSE(after.enemy_torpedoes[0].moving_right);
  EXPECT_EQ(after.enemy_subs[0].shot_timer, 10);
  EXPECT_EQ(after.enemy_subs[0].move_timer, 2);
  EXPECT_EQ(after.enemy_subs[0].x, 2);
  EXPECT_TRUE(game.cell(4, 1, kEnemyTorpedoChannel));
  EXPECT_TRUE(game.cell(4, 2, kEnemySubChannel));
  EXPECT_TRUE(game.cell(4, 3, kTrailChannel));

  game.step(kNoopAction);
  EXPECT_EQ(game.env.state().enemy_torpedoes[0].x, 0);
  game.step(kNoopAction);
  EXPECT_TRUE(game.env.state().enemy_torpedoes.empty());
  EXPECT_EQ(game.env.state().enemy_subs[0].shot_timer, 8);
  // Its move timer ran 2, 1, 0; the next step moves it.
  EXPECT_EQ(game.env.state().enemy_subs[0].x, 2);
  game.step(kNoopAction);
  EXPECT_EQ(game.env.state().enemy_subs[0].x, 1);
  EXPECT_EQ(game.env.state().enemy_subs[0].move_timer, 5);
}

TEST(SeaquestTest, TorpedoesHitEnemiesForOnePointEach) {
  Game game;
  State s = quiet(3, 5);
  s.sub_facing_right = true;
  s.fish = {Swimmer{4, 5, false, 3}};
  game.env.set_state(s);
  StepResult result = game.step(kFireAction);
  EXPECT_EQ(result.reward, 1.0f);
  EXPECT_FALSE(result.terminated);
  EXPECT_TRUE(game.env.state().fish.empty());
  EXPECT_TRUE(game.env.state().player_torpedoes.empty());
  EXPECT_EQ(game.env.state().shot_timer, 4);
  EXPECT_EQ(game.env.state().sub_x, 3);  // Firing does not move the sub.

  // Reloading: fire does nothing until the timer is back at zero.
  game.step(kFireAction);
  EXPECT_TRUE(game.env.state().player_torpedoes.empty());
  EXPECT_EQ(game.env.state().shot_timer, 3);

  // Facing left, a torpedo leaves to the left and flies a cell a step.
  s = quiet(3, 5);
  game.env.set_state(s);
  game.step(kFireAction);
  ASSERT_EQ(game.env.state().player_torpedoes.size(), 1u);
  EXPECT_EQ(game.env.state().player_torpedoes[0].x, 2);
  EXPECT_TRUE(game.cell(5, 2, kPlayerTorpedoChannel));
  EXPECT_TRUE(game.cell(5, 4, kBackChannel));

  // An enemy sub that moves onto a torpedo is destroyed by it.
  s = quiet(8, 8);
  s.player_torpedoes = {Torpedo{7, 5, false}};
  s.enemy_subs = {EnemySub{5, 5, true, 0, 5}};
  game.env.set_state(s);
  result = game.step(kNoopAction);
  EXPECT_EQ(result.reward, 1.0f);
  EXPECT_TRUE(game.env.state().enemy_subs.empty());
  EXPECT_TRUE(game.env.state().player_torpedoes.empty());

  // A torpedo reaching a cell with both a fish and a sub takes the fish.
  s = quiet(8, 8);
  s.player_torpedoes = {Torpedo{4, 2, true}};
  s.fish = {Swimmer{5, 2, true, 3}};
  s.enemy_subs = {EnemySub{5, 2, true, 3, 5}};
  game.env.set_state(s);
  result = game.step(kNoopAction);
  EXPECT_EQ(result.reward, 1.0f);
  EXPECT_TRUE(game.env.state().fish.empty());
  EXPECT_EQ(game.env.state().enemy_subs.size(), 1u);
}

TEST(SeaquestTest, TouchingAnEnemyOrItsTorpedoEndsTheEpisode) {
  {  // A fish swims into the player.
    Game game;
    State s = quiet(4, 4);
    s.fish = {Swimmer{5, 4, false, 0}};
    game.env.set_state(s);
    EXPECT_TRUE(game.step(kNoopAction).terminated);
  }
  {  // The player moves into a waiting fish.
    Game game;
    State s = quiet(4, 4);
    s.fish = {Swimmer{5, 4, false, 3}};
    game.env.set_state(s);
    EXPECT_TRUE(game.step(kRightAction).terminated);
  }
  {  // An enemy sub.
    Game game;
    State s = quiet(4, 4);
    s.enemy_subs = {EnemySub{3, 4, true, 0, 5}};
    game.env.set_state(s);
    EXPECT_TRUE(game.step(kNoopAction).terminated);
  }
  {  // An enemy torpedo.
    Game game;
    State s = quiet(5, 3);
    s.enemy_torpedoes = {Torpedo{6, 3, false}};
    game.env.set_state(s);
    EXPECT_TRUE(game.step(kNoopAction).terminated);
  }
  {  // A fish in the next row passes by.
    Game game;
    State s = quiet(4, 4);
    s.fish = {Swimmer{5, 5, false, 0}};
    game.env.set_state(s);
    EXPECT_FALSE(game.step(kNoopAction).terminated);
  }
}

TEST(SeaquestTest, ThePlayerStaysOffTheGaugeRow) {
  Game game;
  game.env.set_state(quiet(0, 8));
  game.step(kDownAction);
  EXPECT_EQ(game.env.state().sub_y, 8);
  game.step(kLeftAction);
  EXPECT_EQ(game.env.state().sub_x, 0);
  EXPECT_FALSE(game.env.state().sub_facing_right);
  game.step(kRightAction);
  EXPECT_EQ(game.env.state().sub_x, 1);
  EXPECT_TRUE(game.env.state().sub_facing_right);
  EXPECT_TRUE(game.cell(8, 1, kFrontChannel));
  EXPECT_TRUE(game.cell(8, 0, kBackChannel));
}

TEST(SeaquestTest, StickyProbabilityOneRepeatsThePreviousAction) {
  Game game(MinAtarOptions{1.0, true, false});
  game.env.set_state(quiet(5, 3));
  // The previous action starts as no-op, so nothing the agent picks is ever carried out.
  for (int64_t a : {kRightAction, kDownAction, kFireAction}) {
    game.step(a);
    EXPECT_EQ(game.env.last_action(), kNoopAction);
  }
  EXPECT_EQ(game.env.state().sub_x, 5);
  EXPECT_EQ(game.env.state().sub_y, 3);
  EXPECT_TRUE(game.env.state().player_torpedoes.empty());
}

}  // namespace
}  // namespace concord::envs::minatar
