// Sparse CartPole swing-up from fixed states: the pole hangs down at the start, reward 1 only
// when it is up (cos > 0.8) on the track, the episode ends off the track.
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "concord/envs/classic_control/cartpole.h"
#include "concord/envs/exploration/cartpole_swing_up.h"

namespace concord::envs {
namespace {

TEST(CartPoleSwingUp, StartsHangingDown) {
  CartPoleSwingUp env;
  std::vector<float> observation(5);
  env.reset(11, observation.data());
  EXPECT_NEAR(env.state().theta, CartPole::kPi, 0.05);
  EXPECT_NEAR(observation[2], -1.0f, 1e-3);  // cos(theta)
  EXPECT_NEAR(observation[3], 0.0f, 0.05);   // sin(theta)
}

TEST(CartPoleSwingUp, UsesCartPolesEquationsWithoutTheAngleLimit) {
  CartPoleSwingUp env;
  std::vector<float> observation(5);
  env.reset(0, observation.data());
  const CartPole::State start{0.1, -0.2, 1.0, 0.5};  // far beyond CartPole-v1's 12 degrees
  env.set_state(start);
  const StepResult result = env.step(Action{1}, observation.data());
  const CartPole::State expected = CartPole::next_state(start, 1);
  EXPECT_DOUBLE_EQ(env.state().x, expected.x);
  EXPECT_DOUBLE_EQ(env.state().theta_dot, expected.theta_dot);
  EXPECT_FALSE(result.terminated);
  EXPECT_EQ(result.reward, 0.0f);  // cos(1.01) < 0.8
  EXPECT_FLOAT_EQ(observation[2], static_cast<float>(std::cos(expected.theta)));
  EXPECT_FLOAT_EQ(observation[3], static_cast<float>(std::sin(expected.theta)));
}

TEST(CartPoleSwingUp, EarnsOneOnlyWhenUprightOnTheTrack) {
  CartPoleSwingUp env;
  std::vector<float> observation(5);
  env.reset(0, observation.data());
  env.set_state({2.5, 0.0, 0.1, 0.0});
  EXPECT_EQ(env.step(Action{0}, observation.data()).reward, 1.0f);
  env.set_state({0.0, 0.0, 2.0 * CartPole::kPi + 0.1, 0.0});  // a full turn later, still up
  EXPECT_EQ(env.step(Action{0}, observation.data()).reward, 1.0f);
  env.set_state({0.0, 0.0, 0.8, 0.0});  // cos(0.8) = 0.697
  EXPECT_EQ(env.step(Action{0}, observation.data()).reward, 0.0f);
}

TEST(CartPoleSwingUp, LeavingTheTrackTerminatesWithoutReward) {
  CartPoleSwingUp env;
  std::vector<float> observation(5);
  env.reset(0, observation.data());
  env.set_state({2.995, 1.0, 0.0, 0.0});  // x + 0.02 * 1.0 > 3
  const StepResult result = env.step(Action{1}, observation.data());
  EXPECT_TRUE(result.terminated);
  EXPECT_EQ(result.reward, 0.0f);
}

TEST(CartPoleSwingUp, IsTruncatedAfter500Steps) {
  CartPoleSwingUp env;
  std::vector<float> observation(5);
  env.reset(0, observation.data());
  StepResult result;
  for (int step = 0; step < 500 && !result.terminated; ++step) {
    result = env.step(Action{step % 2}, observation.data());
  }
  EXPECT_TRUE(result.truncated);
}

}  // namespace
}  // namespace concord::envs
