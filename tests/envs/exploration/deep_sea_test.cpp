// DeepSea(N) from fixed cells: bsuite's dynamics, rewards and observations.
#include <vector>

#include <gtest/gtest.h>

#include "concord/envs/exploration/deep_sea.h"
#include "concord/envs/registry.h"

namespace concord::envs {
namespace {

constexpr int kSize = 5;

int64_t left_action(const DeepSea& env, int row, int column) { return 1 - env.right_action(row, column); }

TEST(DeepSea, SpecIsAnNxNOneHotGridWithTwoActions) {
  DeepSea env(kSize);
  EXPECT_EQ(env.spec().id, "DeepSea5-v0");
  EXPECT_EQ(env.spec().observation_space.flat_size(), 25);
  EXPECT_EQ(env.spec().action_space.n(), 2);
  EXPECT_TRUE(make_env("DeepSea10-v0") != nullptr);
  EXPECT_TRUE(make_env("DeepSea50-v0") != nullptr);
}

TEST(DeepSea, StartsTopLeftAsAOneHotObservation) {
  DeepSea env(kSize);
  std::vector<float> observation(25, -1.0f);
  env.reset(3, observation.data());
  EXPECT_EQ(env.row(), 0);
  EXPECT_EQ(env.column(), 0);
  EXPECT_EQ(observation[0], 1.0f);
  for (size_t i = 1; i < observation.size(); ++i) EXPECT_EQ(observation[i], 0.0f);
}

TEST(DeepSea, TheActionMappingIsFixedPerCellAndNotConstant) {
  DeepSea a(20), b(20), other(20, /*mapping_seed=*/1);
  int ones = 0;
  bool differs = false;
  for (int row = 0; row < 20; ++row) {
    for (int column = 0; column < 20; ++column) {
      EXPECT_EQ(a.right_action(row, column), b.right_action(row, column));
      differs = differs || a.right_action(row, column) != other.right_action(row, column);
      ones += static_cast<int>(a.right_action(row, column));
    }
  }
  EXPECT_TRUE(differs);
  EXPECT_GT(ones, 150);
  EXPECT_LT(ones, 250);
}

TEST(DeepSea, RightCostsAndMovesRightLeftIsFreeAndClampsAtTheWall) {
  DeepSea env(kSize);
  std::vector<float> observation(25);
  env.reset(0, observation.data());
  env.set_position(2, 1);
  StepResult result = env.step(Action{env.right_action(2, 1)}, observation.data());
  EXPECT_FLOAT_EQ(result.reward, -0.01f / kSize);
  EXPECT_EQ(env.row(), 3);
  EXPECT_EQ(env.column(), 2);
  EXPECT_FALSE(result.terminated);
  EXPECT_EQ(observation[3 * kSize + 2], 1.0f);

  env.set_position(1, 0);
  result = env.step(Action{left_action(env, 1, 0)}, observation.data());
  EXPECT_EQ(result.reward, 0.0f);
  EXPECT_EQ(env.row(), 2);
  EXPECT_EQ(env.column(), 0);
}

TEST(DeepSea, TheAllRightPathEarnsTheTreasureOnTheLastStep) {
  DeepSea env(kSize);
  std::vector<float> observation(25);
  env.reset(0, observation.data());
  double episode_return = 0.0;
  for (int step = 0; step < kSize; ++step) {
    const StepResult result = env.step(Action{env.right_action(env.row(), env.column())}, observation.data());
    episode_return += result.reward;
    EXPECT_EQ(result.terminated, step == kSize - 1);
    EXPECT_FALSE(result.truncated);
    if (step == kSize - 1) {
      EXPECT_FLOAT_EQ(result.reward, 1.0f - 0.01f / kSize);
    }
  }
  EXPECT_NEAR(episode_return, 0.99, 1e-5);
  for (const float value : observation) EXPECT_EQ(value, 0.0f);  // the agent has left the grid
}

TEST(DeepSea, GoingLeftAnywhereOnTheLastRowEarnsNothing) {
  DeepSea env(kSize);
  std::vector<float> observation(25);
  env.reset(0, observation.data());
  env.set_position(kSize - 1, kSize - 1);
  const StepResult result = env.step(Action{left_action(env, kSize - 1, kSize - 1)}, observation.data());
  EXPECT_TRUE(result.terminated);
  EXPECT_EQ(result.reward, 0.0f);
}

}  // namespace
}  // namespace concord::envs
