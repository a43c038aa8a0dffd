#include "concord/envs/classic_control/mountain_car_continuous.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>

#include "concord/envs/registry.h"

namespace concord::envs {
namespace {

using State = MountainCarContinuous::State;

struct Step {
  State state;
  StepResult result;
  float obs[2];
};

Step step_from(const State& start, float force) {
  MountainCarContinuous env;
  Step out;
  env.reset(0, out.obs);
  env.set_state(start);
  Action action;
  action.values = &force;
  out.result = env.step(action, out.obs);
  out.state = env.state();
  return out;
}

double as_float32(double x) { return static_cast<float>(x); }

TEST(MountainCarContinuousTest, SpecMatchesGymnasium) {
  const EnvSpec spec = MountainCarContinuous::make_spec();
  EXPECT_EQ(spec.id, "MountainCarContinuous-v0");
  EXPECT_EQ(spec.max_episode_steps, 999);
  ASSERT_TRUE(spec.reward_threshold.has_value());
  EXPECT_EQ(*spec.reward_threshold, 90.0);
  ASSERT_EQ(spec.action_space.kind(), Space::Kind::kBox);
  ASSERT_EQ(spec.action_space.shape(), std::vector<int64_t>{1});
  EXPECT_EQ(spec.action_space.low(), std::vector<float>{-1.0f});
  EXPECT_EQ(spec.action_space.high(), std::vector<float>{1.0f});
  ASSERT_EQ(spec.observation_space.shape(), std::vector<int64_t>{2});
  EXPECT_EQ(spec.observation_space.low(), (std::vector<float>{-1.2f, -0.07f}));
  EXPECT_EQ(spec.observation_space.high(), (std::vector<float>{0.6f, 0.07f}));
}

TEST(MountainCarContinuousTest, RegistryMakesIt) {
  auto env = make_env("MountainCarContinuous-v0");
  EXPECT_EQ(env->spec().id, "MountainCarContinuous-v0");
  EXPECT_NE(dynamic_cast<MountainCarContinuous*>(env.get()), nullptr);
}

TEST(MountainCarContinuousTest, StepFromFixedStateWorkedByHand) {
  // velocity' = 0 + (0.5 * 0.0015 - 0.0025 * cos(3 * -0.5))
  //           = 0.00075 - 0.0025 * 0.0707372016677029 = 0.000573156995830743
  // position' = -0.5 + velocity' = -0.499426843004169257, both then stored as float32.
  // reward    = -0.1 * 0.5^2 = -0.025
  const Step s = step_from({-0.5, 0.0}, 0.5f);
  const double velocity = 0.0 + (0.5 * 0.0015 - 0.0025 * std::cos(3 * -0.5));
  const double position = -0.5 + velocity;
  EXPECT_NEAR(velocity, 0.000573156995830743, 1e-18);
  EXPECT_EQ(s.state.velocity, as_float32(velocity));
  EXPECT_EQ(s.state.position, as_float32(position));
  EXPECT_EQ(s.obs[0], static_cast<float>(position));
  EXPECT_EQ(s.obs[1], static_cast<float>(velocity));
  EXPECT_FLOAT_EQ(s.result.reward, -0.025f);
  EXPECT_FALSE(s.result.terminated);
}

TEST(MountainCarContinuousTest, NextStepStartsFromFloat32State) {
  MountainCarContinuous env;
  float obs[2];
  env.reset(0, obs);
  env.set_state({-0.5, 0.0});
  float force = 1.0f;
  Action action;
  action.values = &force;
  env.step(action, obs);
  const double p1 = env.state().position;
  const double v1 = env.state().velocity;
  ASSERT_EQ(p1, as_float32(p1));
  ASSERT_EQ(v1, as_float32(v1));
  env.step(action, obs);
  const double v2 = v1 + (1.0 * 0.0015 - 0.0025 * std::cos(3 * p1));
  EXPECT_EQ(env.state().velocity, as_float32(v2));
  EXPECT_EQ(env.state().position, as_float32(p1 + v2));
}

TEST(MountainCarContinuousTest, ForceIsClippedButPenaltyIsNot) {
  const Step unit = step_from({-0.5, 0.0}, 1.0f);
  const Step big = step_from({-0.5, 0.0}, 2.0f);
  EXPECT_EQ(big.state.position, unit.state.position);
  EXPECT_EQ(big.state.velocity, unit.state.velocity);
  EXPECT_FLOAT_EQ(unit.result.reward, -0.1f);
  EXPECT_FLOAT_EQ(big.result.reward, -0.4f);  // -0.1 * 2^2, from the unclipped action.
  const Step negative = step_from({-0.5, 0.0}, -3.0f);
  EXPECT_EQ(negative.state.velocity, step_from({-0.5, 0.0}, -1.0f).state.velocity);
  EXPECT_FLOAT_EQ(negative.result.reward, -0.9f);
  EXPECT_EQ(step_from({-0.5, 0.0}, 0.0f).result.reward, 0.0f);
}

TEST(MountainCarContinuousTest, VelocityClipsToMaxSpeed) {
  // At x = -pi/6, cos(3x) = 0: only the push acts, 0.0695 + 0.0015 > 0.07.
  const double flat = -3.141592653589793 / 6;
  const Step s = step_from({flat, 0.0695}, 1.0f);
  EXPECT_EQ(s.state.velocity, as_float32(0.07));
  EXPECT_EQ(s.state.position, as_float32(flat + 0.07));
  EXPECT_EQ(step_from({flat, -0.0695}, -1.0f).state.velocity, as_float32(-0.07));
}

TEST(MountainCarContinuousTest, LeftWallIsInelastic) {
  const Step s = step_from({-1.19, -0.05}, -1.0f);
  EXPECT_EQ(s.state.position, as_float32(-1.2));
  EXPECT_EQ(s.state.velocity, 0.0);
  EXPECT_EQ(s.obs[0], -1.2f);
  EXPECT_EQ(s.obs[1], 0.0f);
}

TEST(MountainCarContinuousTest, GoalAddsHundredAndTerminates) {
  // At 0.45 the gravity term is 0.0025 * cos(1.35) ~ 5.5e-4 per step.
  const Step s = step_from({0.44, 0.02}, 0.5f);
  EXPECT_TRUE(s.result.terminated);
  EXPECT_FLOAT_EQ(s.result.reward, static_cast<float>(100.0 - 0.1 * 0.25));
  // Just short of 0.45 (velocity' = 0.01 - 1e-6 from 0.44) does not terminate.
  const double pull = 0.0025 * std::cos(3 * 0.44);
  const double v_exact = 0.01 - (0.0 * 0.0015 - pull);  // velocity' == 0.01
  EXPECT_FALSE(step_from({0.44, v_exact - 1e-6}, 0.0f).result.terminated);
  EXPECT_TRUE(step_from({0.44, v_exact + 1e-6}, 0.0f).result.terminated);
  // Past the flag but rolling back: not at the goal.
  const Step back = step_from({0.5, -0.01}, 0.0f);
  EXPECT_GE(back.state.position, 0.45);
  EXPECT_FALSE(back.result.terminated);
}

TEST(MountainCarContinuousTest, TruncatesAtExactly999Steps) {
  MountainCarContinuous env;
  float obs[2];
  float force = 0.0f;
  Action action;
  action.values = &force;
  env.reset(2, obs);
  for (int t = 1; t < 999; ++t) {
    const StepResult result = env.step(action, obs);  // Coasting never reaches the goal.
    ASSERT_FALSE(result.truncated) << t;
    ASSERT_FALSE(result.terminated) << t;
  }
  env.set_state({0.44, 0.02});
  const StepResult result = env.step(action, obs);
  EXPECT_TRUE(result.truncated);
  EXPECT_TRUE(result.terminated);
}

TEST(MountainCarContinuousTest, ResetPositionInRangeAndAtRest) {
  MountainCarContinuous env;
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

TEST(MountainCarContinuousTest, ResetIsDeterministicPerSeed) {
  MountainCarContinuous a;
  MountainCarContinuous b;
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

TEST(MountainCarContinuousTest, ObservationsStayInSpace) {
  MountainCarContinuous env;
  float obs[2];
  core::Rng noise(1);
  env.reset(1, obs);
  for (int t = 0; t < 20000; ++t) {
    // Push with the motion, sometimes past the bounds, so episodes visit walls and goal.
    float force = static_cast<float>(core::uniform(noise, 0.0, 1.5));
    if (env.state().velocity < 0) force = -force;
    Action action;
    action.values = &force;
    const StepResult result = env.step(action, obs);
    ASSERT_TRUE(env.spec().observation_space.contains(obs)) << "step " << t;
    if (result.terminated || result.truncated) env.reset(std::nullopt, obs);
  }
}

TEST(MountainCarContinuousTest, MissingActionValuesThrow) {
  MountainCarContinuous env;
  float obs[2];
  env.reset(0, obs);
  EXPECT_THROW(env.step(Action{}, obs), std::invalid_argument);
}

}  // namespace
}  // namespace concord::envs
