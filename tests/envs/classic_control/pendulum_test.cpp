#include "concord/envs/classic_control/pendulum.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include "concord/envs/registry.h"

namespace concord::envs {
namespace {

using State = Pendulum::State;

constexpr double kPi = 3.141592653589793;

struct Step {
  State state;
  StepResult result;
  float obs[3];
};

Step step_from(const State& start, float torque) {
  Pendulum env;
  Step out;
  env.reset(0, out.obs);
  env.set_state(start);
  Action action;
  action.values = &torque;
  out.result = env.step(action, out.obs);
  out.state = env.state();
  return out;
}

TEST(PendulumTest, SpecMatchesGymnasium) {
  const EnvSpec spec = Pendulum::make_spec();
  EXPECT_EQ(spec.id, "Pendulum-v1");
  EXPECT_EQ(spec.max_episode_steps, 200);
  EXPECT_FALSE(spec.reward_threshold.has_value());
  ASSERT_EQ(spec.action_space.kind(), Space::Kind::kBox);
  ASSERT_EQ(spec.action_space.shape(), std::vector<int64_t>{1});
  EXPECT_EQ(spec.action_space.low(), std::vector<float>{-2.0f});
  EXPECT_EQ(spec.action_space.high(), std::vector<float>{2.0f});
  ASSERT_EQ(spec.observation_space.shape(), std::vector<int64_t>{3});
  EXPECT_EQ(spec.observation_space.low(), (std::vector<float>{-1.0f, -1.0f, -8.0f}));
  EXPECT_EQ(spec.observation_space.high(), (std::vector<float>{1.0f, 1.0f, 8.0f}));
}

TEST(PendulumTest, RegistryMakesIt) {
  auto env = make_env("Pendulum-v1");
  EXPECT_EQ(env->spec().id, "Pendulum-v1");
  EXPECT_NE(dynamic_cast<Pendulum*>(env.get()), nullptr);
}

TEST(PendulumTest, StepFromFixedStateWorkedByHand) {
  // g = 10, m = l = 1, dt = 0.05, from theta = 1, theta_dot = 0.5 with torque 1.5:
  //   cost        = 1^2 + 0.1 * 0.5^2 + 0.001 * 1.5^2 = 1.02725
  //   theta_dot'  = 0.5 + (3 g / (2 l) sin 1 + 3 / (m l^2) * 1.5) * 0.05
  //               = 0.5 + (15 * 0.8414709848078965 + 4.5) * 0.05 = 1.3561032386059226
  //   theta'      = 1 + theta_dot' * 0.05 = 1.0678051619302962
  const Step s = step_from({1.0, 0.5}, 1.5f);
  const double theta_dot = 0.5 + (3 * 10.0 / (2 * 1.0) * std::sin(1.0) + 3.0 / 1.0 * 1.5) * 0.05;
  const double theta = 1.0 + theta_dot * 0.05;
  EXPECT_DOUBLE_EQ(s.state.theta_dot, theta_dot);
  EXPECT_DOUBLE_EQ(s.state.theta, theta);
  EXPECT_NEAR(s.state.theta_dot, 1.3561032386059226, 1e-15);
  EXPECT_NEAR(s.state.theta, 1.0678051619302962, 1e-15);
  EXPECT_FLOAT_EQ(s.obs[0], static_cast<float>(std::cos(theta)));
  EXPECT_FLOAT_EQ(s.obs[1], static_cast<float>(std::sin(theta)));
  EXPECT_FLOAT_EQ(s.obs[2], static_cast<float>(theta_dot));
  EXPECT_FLOAT_EQ(s.result.reward, -1.02725f);
  EXPECT_FALSE(s.result.terminated);
  EXPECT_FALSE(s.result.truncated);
}

TEST(PendulumTest, TorqueIsClippedInDynamicsAndCost) {
  const Step clipped = step_from({0.3, -0.2}, 3.0f);
  const Step max = step_from({0.3, -0.2}, 2.0f);
  EXPECT_EQ(clipped.state.theta, max.state.theta);
  EXPECT_EQ(clipped.state.theta_dot, max.state.theta_dot);
  EXPECT_EQ(clipped.result.reward, max.result.reward);
  EXPECT_FLOAT_EQ(max.result.reward, static_cast<float>(-(0.09 + 0.1 * 0.04 + 0.001 * 4.0)));
  EXPECT_EQ(step_from({0.3, -0.2}, -5.0f).state.theta_dot, step_from({0.3, -0.2}, -2.0f).state.theta_dot);
}

TEST(PendulumTest, SpeedClipsToEight) {
  // 7.9 + (15 sin(pi/2) + 3 * 2) * 0.05 = 8.95 -> 8, and theta moves by 8 * 0.05 = 0.4.
  const Step s = step_from({kPi / 2, 7.9}, 2.0f);
  EXPECT_EQ(s.state.theta_dot, 8.0);
  EXPECT_DOUBLE_EQ(s.state.theta, kPi / 2 + 0.4);
  EXPECT_EQ(step_from({-kPi / 2, -7.9}, -2.0f).state.theta_dot, -8.0);
}

TEST(PendulumTest, RewardWrapsThetaButStateDoesNot) {
  // angle_normalize(4) = 4 - 2 pi = -2.2831853071795862; angle_normalize(-4) = +2.28318...
  EXPECT_NEAR(Pendulum::angle_normalize(4.0), -2.2831853071795862, 1e-15);
  EXPECT_NEAR(Pendulum::angle_normalize(-4.0), 2.2831853071795862, 1e-15);
  EXPECT_EQ(Pendulum::angle_normalize(kPi), -kPi);  // The interval is [-pi, pi).
  EXPECT_EQ(Pendulum::angle_normalize(-kPi), -kPi);
  EXPECT_NEAR(Pendulum::angle_normalize(0.5 + 6 * kPi), 0.5, 1e-14);
  EXPECT_NEAR(Pendulum::angle_normalize(0.5 - 6 * kPi), 0.5, 1e-14);
  EXPECT_EQ(Pendulum::angle_normalize(0.0), 0.0);

  const Step s = step_from({4.0, 0.0}, 0.0f);
  const double a = 4.0 - 2 * kPi;
  EXPECT_FLOAT_EQ(s.result.reward, static_cast<float>(-(a * a)));
  // theta keeps growing past pi in the state.
  const Step past = step_from({3.1, 8.0}, 2.0f);
  EXPECT_DOUBLE_EQ(past.state.theta, 3.1 + 8.0 * 0.05);
  EXPECT_GT(past.state.theta, kPi);
}

TEST(PendulumTest, UprightAtRestIsTheBestReward) {
  const Step s = step_from({0.0, 0.0}, 0.0f);
  EXPECT_EQ(s.result.reward, 0.0f);
  // The worst: -(pi^2 + 0.1 * 8^2 + 0.001 * 2^2) = -16.2736044...
  const Step worst = step_from({-kPi, 8.0}, 2.0f);
  EXPECT_FLOAT_EQ(worst.result.reward, -16.2736044f);
}

TEST(PendulumTest, NeverTerminatesAndTruncatesAt200) {
  Pendulum env;
  float obs[3];
  core::Rng noise(4);
  env.reset(4, obs);
  for (int t = 1; t <= 200; ++t) {
    float torque = static_cast<float>(core::uniform(noise, -3.0, 3.0));
    Action action;
    action.values = &torque;
    const StepResult result = env.step(action, obs);
    ASSERT_FALSE(result.terminated) << t;
    ASSERT_EQ(result.truncated, t == 200) << t;
    ASSERT_TRUE(env.spec().observation_space.contains(obs)) << t;
    ASSERT_LE(result.reward, 0.0f);
    ASSERT_GE(result.reward, -16.2736044f);
  }
}

TEST(PendulumTest, ResetDrawsThetaAndSpeedInRange) {
  Pendulum env;
  float obs[3];
  env.reset(13, obs);
  for (int episode = 0; episode < 2000; ++episode) {
    env.reset(std::nullopt, obs);
    ASSERT_GE(env.state().theta, -kPi);
    ASSERT_LT(env.state().theta, kPi);
    ASSERT_GE(env.state().theta_dot, -1.0);
    ASSERT_LT(env.state().theta_dot, 1.0);
    ASSERT_EQ(obs[0], static_cast<float>(std::cos(env.state().theta)));
    ASSERT_EQ(obs[1], static_cast<float>(std::sin(env.state().theta)));
    ASSERT_EQ(obs[2], static_cast<float>(env.state().theta_dot));
  }
}

TEST(PendulumTest, ResetIsDeterministicPerSeed) {
  Pendulum a;
  Pendulum b;
  float obs_a[3];
  float obs_b[3];
  a.reset(21, obs_a);
  b.reset(21, obs_b);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(obs_a[i], obs_b[i]);
  b.reset(22, obs_b);
  EXPECT_NE(obs_a[2], obs_b[2]);

  float first[3];
  a.reset(21, first);
  a.reset(std::nullopt, obs_a);
  EXPECT_NE(obs_a[2], first[2]);
  b.reset(21, obs_b);
  b.reset(std::nullopt, obs_b);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(obs_a[i], obs_b[i]);
}

TEST(PendulumTest, MissingActionValuesThrow) {
  Pendulum env;
  float obs[3];
  env.reset(0, obs);
  EXPECT_THROW(env.step(Action{}, obs), std::invalid_argument);
}

}  // namespace
}  // namespace concord::envs
