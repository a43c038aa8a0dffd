#include "concord/envs/classic_control/mountain_car.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>

#include "concord/envs/registry.h"

namespace concord::envs {
namespace {

using State = MountainCar::State;

Action discrete(int64_t index) {
  Action action;
  action.index = index;
  return action;
}

struct Step {
  State state;
  StepResult result;
  float obs[2];
};

Step step_from(const State& start, int64_t action) {
  MountainCar env;
  Step out;
  env.reset(0, out.obs);
  env.set_state(start);
  out.result = env.step(discrete(action), out.obs);
  out.state = env.state();
  return out;
}

TEST(MountainCarTest, SpecMatchesGymnasium) {
  const EnvSpec spec = MountainCar::make_spec();
  EXPECT_EQ(spec.id, "MountainCar-v0");
  EXPECT_EQ(spec.max_episode_steps, 200);
  ASSERT_TRUE(spec.reward_threshold.has_value());
  EXPECT_EQ(*spec.reward_threshold, -110.0);
  ASSERT_TRUE(spec.action_space.is_discrete());
  EXPECT_EQ(spec.action_space.n(), 3);
  ASSERT_EQ(spec.observation_space.shape(), std::vector<int64_t>{2});
  EXPECT_EQ(spec.observation_space.low(), (std::vector<float>{-1.2f, -0.07f}));
  EXPECT_EQ(spec.observation_space.high(), (std::vector<float>{0.6f, 0.07f}));
}

TEST(MountainCarTest, RegistryMakesIt) {
  auto env = make_env("MountainCar-v0");
  EXPECT_EQ(env->spec().id, "MountainCar-v0");
  EXPECT_NE(dynamic_cast<MountainCar*>(env.get()), nullptr);
}

TEST(MountainCarTest, StepFromFixedStateWorkedByHand) {
  // velocity' = 0.01 + ((2 - 1) * 0.001 + cos(3 * -0.5) * -0.0025)
  //           = 0.01 + (0.001 - 0.0025 * 0.0707372016677029) = 0.010823156995830743
  // position' = -0.5 + velocity' = -0.48917684300416925
  const Step s = step_from({-0.5, 0.01}, 2);
  const double velocity = 0.01 + (1 * 0.001 + std::cos(3 * -0.5) * -0.0025);
  EXPECT_DOUBLE_EQ(s.state.velocity, velocity);
  EXPECT_DOUBLE_EQ(s.state.position, -0.5 + velocity);
  EXPECT_NEAR(s.state.velocity, 0.010823156995830743, 1e-17);
  EXPECT_NEAR(s.state.position, -0.48917684300416925, 1e-16);
  EXPECT_FLOAT_EQ(s.obs[0], static_cast<float>(-0.5 + velocity));
  EXPECT_FLOAT_EQ(s.obs[1], static_cast<float>(velocity));
  EXPECT_EQ(s.result.reward, -1.0f);
  EXPECT_FALSE(s.result.terminated);
  EXPECT_FALSE(s.result.truncated);
}

TEST(MountainCarTest, EachActionPushesByForce) {
  // At x = 0 the slope term is -0.0025 * cos(0) = -0.0025, so from rest velocity' is
  // -0.0035, -0.0025 and -0.0015 for actions 0, 1 and 2.
  const double expected[] = {-0.0035, -0.0025, -0.0015};
  for (int64_t action : {0, 1, 2}) {
    const Step s = step_from({0.0, 0.0}, action);
    EXPECT_NEAR(s.state.velocity, expected[action], 1e-18) << action;
    EXPECT_DOUBLE_EQ(s.state.position, s.state.velocity) << action;
  }
}

TEST(MountainCarTest, VelocityClipsToMaxSpeed) {
  // At x = -pi/6, cos(3x) = 0: only the push acts, 0.0695 + 0.001 > 0.07.
  const double flat = -3.141592653589793 / 6;
  const Step right = step_from({flat, 0.0695}, 2);
  EXPECT_EQ(right.state.velocity, 0.07);
  EXPECT_DOUBLE_EQ(right.state.position, flat + 0.07);
  const Step left = step_from({flat, -0.0695}, 0);
  EXPECT_EQ(left.state.velocity, -0.07);
}

TEST(MountainCarTest, LeftWallIsInelastic) {
  // -1.19 + (-0.05 + ...) < -1.2: the position clips to -1.2 and the velocity becomes 0.
  const Step s = step_from({-1.19, -0.05}, 0);
  EXPECT_EQ(s.state.position, -1.2);
  EXPECT_EQ(s.state.velocity, 0.0);
  EXPECT_EQ(s.obs[0], -1.2f);
  EXPECT_EQ(s.obs[1], 0.0f);
}

TEST(MountainCarTest, RightEdgeClipsWithoutStopping) {
  const Step s = step_from({0.59, 0.05}, 2);
  EXPECT_EQ(s.state.position, 0.6);
  EXPECT_GT(s.state.velocity, 0.0);
  EXPECT_TRUE(s.result.terminated);
}

TEST(MountainCarTest, GoalNeedsPositionAndNonNegativeVelocity) {
  // Near x = 0.5 gravity pulls back by 0.0025 * cos(1.5) ~ 1.8e-4 per step.
  const double pull = std::cos(3 * 0.49) * -0.0025;
  // Reaches 0.5 exactly or beyond: terminates.
  const double exact_velocity = 0.01 - (1 * 0.001 + pull);  // velocity' == 0.01
  EXPECT_TRUE(step_from({0.49, exact_velocity + 1e-6}, 2).result.terminated);
  // Stops just short of 0.5: does not.
  EXPECT_FALSE(step_from({0.49, exact_velocity - 1e-6}, 2).result.terminated);
  // Past the flag but rolling back (velocity < 0): does not.
  const Step back = step_from({0.58, -0.01}, 1);
  EXPECT_GE(back.state.position, 0.5);
  EXPECT_LT(back.state.velocity, 0.0);
  EXPECT_FALSE(back.result.terminated);
  // The reward is -1 on the terminating step too.
  EXPECT_EQ(step_from({0.55, 0.01}, 2).result.reward, -1.0f);
}

TEST(MountainCarTest, TruncatesAtExactly200Steps) {
  MountainCar env;
  float obs[2];
  env.reset(4, obs);
  for (int t = 1; t < 200; ++t) {
    const StepResult result = env.step(discrete(1), obs);  // Coasting never reaches the goal.
    ASSERT_FALSE(result.truncated) << t;
    ASSERT_FALSE(result.terminated) << t;
  }
  EXPECT_TRUE(env.step(discrete(1), obs).truncated);

  env.reset(4, obs);
  for (int t = 1; t < 200; ++t) env.step(discrete(1), obs);
  env.set_state({0.55, 0.01});
  const StepResult result = env.step(discrete(2), obs);
  EXPECT_TRUE(result.truncated);
  EXPECT_TRUE(result.terminated);
}

TEST(MountainCarTest, ResetPositionInRangeAndAtRest) {
  MountainCar env;
  float obs[2];
  env.reset(8, obs);
  for (int episode = 0; episode < 2000; ++episode) {
    env.reset(std::nullopt, obs);
    ASSERT_GE(env.state().position, -0.6);
    ASSERT_LT(env.state().position, -0.4);
    ASSERT_EQ(env.state().velocity, 0.0);
    ASSERT_EQ(obs[0], static_cast<float>(env.state().position));
    ASSERT_EQ(obs[1], 0.0f);
  }
}

TEST(MountainCarTest, ResetIsDeterministicPerSeed) {
  MountainCar a;
  MountainCar b;
  float obs_a[2];
  float obs_b[2];
  a.reset(21, obs_a);
  b.reset(21, obs_b);
  EXPECT_EQ(obs_a[0], obs_b[0]);
  b.reset(22, obs_b);
  EXPECT_NE(obs_a[0], obs_b[0]);

  float first[2];
  a.reset(21, first);
  a.reset(std::nullopt, obs_a);
  EXPECT_NE(obs_a[0], first[0]);
  b.reset(21, obs_b);
  b.reset(std::nullopt, obs_b);
  EXPECT_EQ(obs_a[0], obs_b[0]);
}

TEST(MountainCarTest, ObservationsStayInSpace) {
  MountainCar env;
  float obs[2];
  core::Rng actions(1);
  env.reset(1, obs);
  for (int t = 0; t < 20000; ++t) {
    // Mostly push in the direction of motion, so the episodes visit both walls and the goal.
    const int64_t action =
        core::uniform_index(actions, 4) == 0 ? core::uniform_index(actions, 3) : (env.state().velocity >= 0 ? 2 : 0);
    const StepResult result = env.step(discrete(action), obs);
    ASSERT_TRUE(env.spec().observation_space.contains(obs)) << "step " << t;
    if (result.terminated || result.truncated) env.reset(std::nullopt, obs);
  }
}

TEST(MountainCarTest, InvalidActionThrowsNamingEnvAndValue) {
  MountainCar env;
  float obs[2];
  env.reset(0, obs);
  for (int64_t bad : {-1, 3}) {
    try {
      env.step(discrete(bad), obs);
      ADD_FAILURE() << "no exception for action " << bad;
    } catch (const std::invalid_argument& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("MountainCar-v0"), std::string::npos) << message;
      EXPECT_NE(message.find(std::to_string(bad)), std::string::npos) << message;
    }
  }
}

}  // namespace
}  // namespace concord::envs
