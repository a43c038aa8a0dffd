// Sparse MountainCar from fixed states: MountainCar-v0's dynamics, reward only at the goal.
#include <vector>

#include <gtest/gtest.h>

#include "concord/envs/classic_control/mountain_car.h"
#include "concord/envs/exploration/sparse_mountain_car.h"

namespace concord::envs {
namespace {

TEST(SparseMountainCar, FollowsMountainCarDynamicsWithZeroRewardOffTheGoal) {
  SparseMountainCar sparse;
  MountainCar dense;
  std::vector<float> sparse_observation(2), dense_observation(2);
  sparse.reset(5, sparse_observation.data());
  dense.reset(5, dense_observation.data());
  EXPECT_EQ(sparse_observation, dense_observation);  // the same start distribution
  for (int64_t action : {2, 2, 0, 1, 0, 2}) {
    const StepResult s = sparse.step(Action{action}, sparse_observation.data());
    const StepResult d = dense.step(Action{action}, dense_observation.data());
    EXPECT_EQ(sparse_observation, dense_observation);
    EXPECT_EQ(s.reward, 0.0f);
    EXPECT_EQ(d.reward, -1.0f);
    EXPECT_FALSE(s.terminated);
  }
}

TEST(SparseMountainCar, ReachingTheGoalEarnsOneAndTerminates) {
  SparseMountainCar env;
  std::vector<float> observation(2);
  env.reset(0, observation.data());
  env.set_state({0.49, 0.02});
  const StepResult result = env.step(Action{2}, observation.data());
  EXPECT_TRUE(result.terminated);
  EXPECT_EQ(result.reward, 1.0f);
  EXPECT_GE(observation[0], 0.5f);
}

TEST(SparseMountainCar, IsTruncatedAfter500Steps) {
  SparseMountainCar env;
  std::vector<float> observation(2);
  env.reset(0, observation.data());
  StepResult result;
  for (int step = 0; step < 500; ++step) result = env.step(Action{1}, observation.data());
  EXPECT_TRUE(result.truncated);
  EXPECT_EQ(env.spec().id, "SparseMountainCar-v0");
}

}  // namespace
}  // namespace concord::envs
