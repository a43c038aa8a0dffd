#include "concord/envs/classic_control/acrobot.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <stdexcept>
#include <string>

#include "concord/envs/registry.h"

namespace concord::envs {
namespace {

using State = Acrobot::State;
using Vec4 = std::array<double, 4>;

constexpr double kPi = 3.141592653589793;

Action discrete(int64_t index) {
  Action action;
  action.index = index;
  return action;
}

// The book equations of motion (Sutton & Barto), with Gymnasium's constants substituted by hand:
// m1 = m2 = 1, l1 = 1, lc1 = lc2 = 0.5, I1 = I2 = 1, g = 9.8, and cos(x - pi/2) = sin(x).
//   d1   = m1 lc1^2 + m2 (l1^2 + lc2^2 + 2 l1 lc2 cos t2) + I1 + I2 = 3.5 + cos t2
//   d2   = m2 (lc2^2 + l1 lc2 cos t2) + I2                         = 1.25 + 0.5 cos t2
//   phi2 = m2 lc2 g sin(t1 + t2)                                   = 4.9 sin(t1 + t2)
//   phi1 = -m2 l1 lc2 (dt2^2 + 2 dt2 dt1) sin t2 + (m1 lc1 + m2 l1) g sin t1 + phi2
//        = -0.5 (dt2^2 + 2 dt2 dt1) sin t2 + 14.7 sin t1 + phi2
//   ddt2 = (a + d2 / d1 phi1 - m2 l1 lc2 dt1^2 sin t2 - phi2) / (m2 lc2^2 + I2 - d2^2 / d1)
//        = (a + d2 / d1 phi1 - 0.5 dt1^2 sin t2 - phi2) / (1.25 - d2^2 / d1)
//   ddt1 = -(d2 ddt2 + phi1) / d1
Vec4 book_derivatives(const Vec4& s, double torque) {
  const double t1 = s[0];
  const double t2 = s[1];
  const double dt1 = s[2];
  const double dt2 = s[3];
  const double d1 = 3.5 + std::cos(t2);
  const double d2 = 1.25 + 0.5 * std::cos(t2);
  const double phi2 = 4.9 * std::sin(t1 + t2);
  const double phi1 = -0.5 * (dt2 * dt2 + 2 * dt2 * dt1) * std::sin(t2) + 14.7 * std::sin(t1) + phi2;
  const double ddt2 = (torque + d2 / d1 * phi1 - 0.5 * dt1 * dt1 * std::sin(t2) - phi2) / (1.25 - d2 * d2 / d1);
  const double ddt1 = -(d2 * ddt2 + phi1) / d1;
  return {dt1, dt2, ddt1, ddt2};
}

// Classic fourth-order Runge-Kutta over one step h with the torque held constant.
Vec4 rk4(const Vec4& y, double torque, double h) {
  auto shifted = [&](const Vec4& k, double scale) {
    Vec4 out;
    for (int i = 0; i < 4; ++i) out[i] = y[i] + scale * k[i];
    return out;
  };
  const Vec4 k1 = book_derivatives(y, torque);
  const Vec4 k2 = book_derivatives(shifted(k1, h / 2), torque);
  const Vec4 k3 = book_derivatives(shifted(k2, h / 2), torque);
  const Vec4 k4 = book_derivatives(shifted(k3, h), torque);
  Vec4 out;
  for (int i = 0; i < 4; ++i) out[i] = y[i] + h / 6 * (k1[i] + 2 * k2[i] + 2 * k3[i] + k4[i]);
  return out;
}

double torque_of(int64_t action) { return static_cast<double>(action) - 1.0; }

// One env step as the test understands it: RK4 over 0.2 s, angles wrapped into [-pi, pi],
// velocities clipped to 4 pi and 9 pi.
Vec4 expected_step(const Vec4& s, int64_t action) {
  Vec4 next = rk4(s, torque_of(action), 0.2);
  for (int i = 0; i < 2; ++i) {
    while (next[i] > kPi) next[i] -= 2 * kPi;
    while (next[i] < -kPi) next[i] += 2 * kPi;
  }
  next[2] = std::fmin(std::fmax(next[2], -4 * kPi), 4 * kPi);
  next[3] = std::fmin(std::fmax(next[3], -9 * kPi), 9 * kPi);
  return next;
}

double tip_height(const Vec4& s) { return -std::cos(s[0]) - std::cos(s[0] + s[1]); }

State to_state(const Vec4& v) { return {v[0], v[1], v[2], v[3]}; }

TEST(AcrobotTest, SpecMatchesGymnasium) {
  const EnvSpec spec = Acrobot::make_spec();
  EXPECT_EQ(spec.id, "Acrobot-v1");
  EXPECT_EQ(spec.max_episode_steps, 500);
  ASSERT_TRUE(spec.reward_threshold.has_value());
  EXPECT_EQ(*spec.reward_threshold, -100.0);
  ASSERT_TRUE(spec.action_space.is_discrete());
  EXPECT_EQ(spec.action_space.n(), 3);
  const Space& obs = spec.observation_space;
  ASSERT_EQ(obs.shape(), std::vector<int64_t>{6});
  // 4 pi and 9 pi rounded to float32.
  EXPECT_EQ(obs.high(), (std::vector<float>{1, 1, 1, 1, 12.566371f, 28.274334f}));
  EXPECT_EQ(obs.low(), (std::vector<float>{-1, -1, -1, -1, -12.566371f, -28.274334f}));
}

TEST(AcrobotTest, RegistryMakesIt) {
  auto env = make_env("Acrobot-v1");
  EXPECT_EQ(env->spec().id, "Acrobot-v1");
  EXPECT_NE(dynamic_cast<Acrobot*>(env.get()), nullptr);
}

TEST(AcrobotTest, DerivativesMatchBookEquations) {
  const Vec4 states[] = {{0.0, 0.0, 0.0, 0.0},
                         {0.1, -0.05, 0.02, 0.03},
                         {1.3, 2.1, -3.0, 5.5},
                         {-2.9, 0.7, 11.0, -25.0},
                         {3.1, -3.1, 0.5, 0.5}};
  for (const Vec4& s : states) {
    for (int64_t action : {0, 1, 2}) {
      const State d = Acrobot::derivatives(to_state(s), torque_of(action));
      const Vec4 expected = book_derivatives(s, torque_of(action));
      EXPECT_EQ(d.theta1, expected[0]);
      EXPECT_EQ(d.theta2, expected[1]);
      EXPECT_NEAR(d.dtheta1, expected[2], 1e-12);
      EXPECT_NEAR(d.dtheta2, expected[3], 1e-12);
    }
  }
}

TEST(AcrobotTest, StepMatchesHandCodedRk4) {
  const Vec4 states[] = {
      {0.05, -0.03, 0.01, 0.02}, {1.0, -0.5, 2.0, -3.0}, {-2.0, 1.5, -4.0, 6.0}, {0.3, 0.2, -1.0, 1.0}};
  for (const Vec4& s : states) {
    for (int64_t action : {0, 1, 2}) {
      SCOPED_TRACE("action " + std::to_string(action) + " theta1 " + std::to_string(s[0]));
      Acrobot env;
      float obs[6];
      env.reset(0, obs);
      env.set_state(to_state(s));
      const StepResult result = env.step(discrete(action), obs);
      const Vec4 expected = expected_step(s, action);
      EXPECT_NEAR(env.state().theta1, expected[0], 1e-12);
      EXPECT_NEAR(env.state().theta2, expected[1], 1e-12);
      EXPECT_NEAR(env.state().dtheta1, expected[2], 1e-12);
      EXPECT_NEAR(env.state().dtheta2, expected[3], 1e-12);
      EXPECT_FLOAT_EQ(obs[0], static_cast<float>(std::cos(expected[0])));
      EXPECT_FLOAT_EQ(obs[1], static_cast<float>(std::sin(expected[0])));
      EXPECT_FLOAT_EQ(obs[2], static_cast<float>(std::cos(expected[1])));
      EXPECT_FLOAT_EQ(obs[3], static_cast<float>(std::sin(expected[1])));
      EXPECT_FLOAT_EQ(obs[4], static_cast<float>(expected[2]));
      EXPECT_FLOAT_EQ(obs[5], static_cast<float>(expected[3]));
      const bool terminated = tip_height(expected) > 1.0;
      EXPECT_EQ(result.terminated, terminated);
      EXPECT_EQ(result.reward, terminated ? 0.0f : -1.0f);
    }
  }
}

TEST(AcrobotTest, TorqueOfEachAction) {
  // At rest hanging down only the torque acts: ddtheta2 = a / (1.25 - 1.75^2 / 4.5) at t = 0,
  // so the first link is pushed the opposite way of the second.
  for (int64_t action : {0, 1, 2}) {
    const State d = Acrobot::derivatives({0.0, 0.0, 0.0, 0.0}, torque_of(action));
    EXPECT_NEAR(d.dtheta2, torque_of(action) / (1.25 - 1.75 * 1.75 / 4.5), 1e-12);
    EXPECT_NEAR(d.dtheta1, -1.75 * d.dtheta2 / 4.5, 1e-12);
  }
}

TEST(AcrobotTest, AnglesWrapIntoMinusPiPi) {
  const Vec4 start{3.1, -3.1, 3.0, -3.0};
  const Vec4 raw = rk4(start, 0.0, 0.2);
  ASSERT_GT(raw[0], kPi);  // The test needs both angles to leave [-pi, pi].
  ASSERT_LT(raw[1], -kPi);
  Acrobot env;
  float obs[6];
  env.reset(0, obs);
  env.set_state(to_state(start));
  env.step(discrete(1), obs);
  EXPECT_NEAR(env.state().theta1, raw[0] - 2 * kPi, 1e-12);
  EXPECT_NEAR(env.state().theta2, raw[1] + 2 * kPi, 1e-12);
}

TEST(AcrobotTest, VelocitiesClipToFourPiAndNinePi) {
  const Vec4 start{0.0, 0.0, 20.0, -40.0};
  const Vec4 raw = rk4(start, 1.0, 0.2);
  ASSERT_GT(raw[2], 4 * kPi);
  ASSERT_LT(raw[3], -9 * kPi);
  Acrobot env;
  float obs[6];
  env.reset(0, obs);
  env.set_state(to_state(start));
  env.step(discrete(2), obs);
  EXPECT_EQ(env.state().dtheta1, 4 * kPi);
  EXPECT_EQ(env.state().dtheta2, -9 * kPi);
  EXPECT_EQ(obs[4], static_cast<float>(4 * kPi));
  EXPECT_EQ(obs[5], static_cast<float>(-9 * kPi));
  EXPECT_TRUE(env.spec().observation_space.contains(obs));
}

TEST(AcrobotTest, TerminatesWhenTipRisesAboveOneLink) {
  // Starting at rest with both links straight at angle t1, find by bisection the t1 whose next
  // tip height is exactly 1 under zero torque; just above it terminates, just below does not.
  auto next_height = [](double t1) { return tip_height(expected_step({t1, 0.0, 0.0, 0.0}, 1)); };
  double low = 2.0;
  double high = 2.8;
  ASSERT_LT(next_height(low), 1.0);
  ASSERT_GT(next_height(high), 1.0);
  for (int i = 0; i < 60; ++i) {
    const double mid = 0.5 * (low + high);
    (next_height(mid) > 1.0 ? high : low) = mid;
  }
  for (double margin : {1e-7, -1e-7}) {
    Acrobot env;
    float obs[6];
    env.reset(0, obs);
    env.set_state({high + margin, 0.0, 0.0, 0.0});
    const StepResult result = env.step(discrete(1), obs);
    EXPECT_EQ(result.terminated, margin > 0) << margin;
    EXPECT_EQ(result.reward, margin > 0 ? 0.0f : -1.0f);
  }
}

TEST(AcrobotTest, TruncatesAtExactly500Steps) {
  Acrobot env;
  float obs[6];
  env.reset(2, obs);
  for (int t = 1; t < 500; ++t) {
    env.set_state({0.0, 0.0, 0.0, 0.0});
    const StepResult result = env.step(discrete(1), obs);
    ASSERT_FALSE(result.truncated) << t;
    ASSERT_FALSE(result.terminated) << t;
  }
  // Upright and at rest: still above the line after one step, so both flags at once.
  env.set_state({kPi, 0.0, 0.0, 0.0});
  const StepResult result = env.step(discrete(1), obs);
  EXPECT_TRUE(result.truncated);
  EXPECT_TRUE(result.terminated);
  EXPECT_EQ(result.reward, 0.0f);
}

TEST(AcrobotTest, ResetDrawsFloat32StateInRange) {
  Acrobot env;
  float obs[6];
  env.reset(17, obs);
  for (int episode = 0; episode < 2000; ++episode) {
    env.reset(std::nullopt, obs);
    const State& s = env.state();
    for (double v : {s.theta1, s.theta2, s.dtheta1, s.dtheta2}) {
      ASSERT_GE(v, -0.1);
      ASSERT_LE(v, 0.1);  // float32 rounding can land on 0.1f's neighbourhood, never beyond.
      ASSERT_EQ(v, static_cast<double>(static_cast<float>(v)));
    }
    EXPECT_FLOAT_EQ(obs[0], static_cast<float>(std::cos(s.theta1)));
    EXPECT_FLOAT_EQ(obs[1], static_cast<float>(std::sin(s.theta1)));
    EXPECT_FLOAT_EQ(obs[2], static_cast<float>(std::cos(s.theta2)));
    EXPECT_FLOAT_EQ(obs[3], static_cast<float>(std::sin(s.theta2)));
    EXPECT_EQ(obs[4], static_cast<float>(s.dtheta1));
    EXPECT_EQ(obs[5], static_cast<float>(s.dtheta2));
  }
}

TEST(AcrobotTest, ResetIsDeterministicPerSeed) {
  Acrobot a;
  Acrobot b;
  float obs_a[6];
  float obs_b[6];
  a.reset(5, obs_a);
  b.reset(5, obs_b);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(obs_a[i], obs_b[i]);
  b.reset(6, obs_b);
  bool differs = false;
  for (int i = 0; i < 6; ++i) differs = differs || obs_a[i] != obs_b[i];
  EXPECT_TRUE(differs);

  float first[6];
  a.reset(5, first);
  a.reset(std::nullopt, obs_a);
  differs = false;
  for (int i = 0; i < 6; ++i) differs = differs || obs_a[i] != first[i];
  EXPECT_TRUE(differs);
  b.reset(5, obs_b);
  b.reset(std::nullopt, obs_b);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(obs_a[i], obs_b[i]);
}

TEST(AcrobotTest, ObservationsStayInSpace) {
  Acrobot env;
  float obs[6];
  core::Rng actions(3);
  env.reset(3, obs);
  for (int t = 0; t < 20000; ++t) {
    const StepResult result = env.step(discrete(core::uniform_index(actions, 3)), obs);
    ASSERT_TRUE(env.spec().observation_space.contains(obs)) << "step " << t;
    ASSERT_GE(env.state().theta1, -kPi);
    ASSERT_LE(env.state().theta1, kPi);
    if (result.terminated || result.truncated) env.reset(std::nullopt, obs);
  }
}

TEST(AcrobotTest, InvalidActionThrowsNamingEnvAndValue) {
  Acrobot env;
  float obs[6];
  env.reset(0, obs);
  for (int64_t bad : {-1, 3}) {
    try {
      env.step(discrete(bad), obs);
      ADD_FAILURE() << "no exception for action " << bad;
    } catch (const std::invalid_argument& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("Acrobot-v1"), std::string::npos) << message;
      EXPECT_NE(message.find(std::to_string(bad)), std::string::npos) << message;
    }
  }
}

}  // namespace
}  // namespace concord::envs
