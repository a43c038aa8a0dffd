#include "concord/envs/classic_control/cartpole.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "concord/envs/registry.h"

namespace concord::envs {
namespace {

using State = CartPole::State;

Action discrete(int64_t index) {
  Action action;
  action.index = index;
  return action;
}

// Gymnasium's constants, written out here rather than read from the class under test.
constexpr double kGravity = 9.8;
constexpr double kMassCart = 1.0;
constexpr double kMassPole = 0.1;
constexpr double kHalfLength = 0.5;
constexpr double kForceMag = 10.0;
constexpr double kTau = 0.02;
constexpr double kThetaThreshold = 0.20943951023931953;  // 12 degrees in radians.

TEST(CartPoleTest, SpecMatchesGymnasium) {
  const EnvSpec spec = CartPole::make_spec();
  EXPECT_EQ(spec.id, "CartPole-v1");
  EXPECT_EQ(spec.max_episode_steps, 500);
  ASSERT_TRUE(spec.reward_threshold.has_value());
  EXPECT_EQ(*spec.reward_threshold, 475.0);
  ASSERT_TRUE(spec.action_space.is_discrete());
  EXPECT_EQ(spec.action_space.n(), 2);
  const Space& obs = spec.observation_space;
  ASSERT_EQ(obs.kind(), Space::Kind::kBox);
  ASSERT_EQ(obs.shape(), std::vector<int64_t>{4});
  const float inf = std::numeric_limits<float>::infinity();
  // 2 * 2.4 and 2 * 12 degrees, as float32.
  EXPECT_EQ(obs.high(), (std::vector<float>{4.8f, inf, 0.41887903f, inf}));
  EXPECT_EQ(obs.low(), (std::vector<float>{-4.8f, -inf, -0.41887903f, -inf}));
  EXPECT_FLOAT_EQ(static_cast<float>(CartPole::kThetaThreshold), 0.20943951f);
}

TEST(CartPoleTest, RegistryMakesIt) {
  auto env = make_env("CartPole-v1");
  EXPECT_EQ(env->spec().id, "CartPole-v1");
  EXPECT_NE(dynamic_cast<CartPole*>(env.get()), nullptr);
}

// One Euler step of the cart-pole equations, derived by hand in the test.
State expected_step(const State& s, int64_t action) {
  const double force = action == 1 ? kForceMag : -kForceMag;
  const double total_mass = kMassPole + kMassCart;
  const double pole_mass_length = kMassPole * kHalfLength;
  const double c = std::cos(s.theta);
  const double sn = std::sin(s.theta);
  const double temp = (force + pole_mass_length * s.theta_dot * s.theta_dot * sn) / total_mass;
  const double theta_acc = (kGravity * sn - c * temp) / (kHalfLength * (4.0 / 3.0 - kMassPole * c * c / total_mass));
  const double x_acc = temp - pole_mass_length * theta_acc * c / total_mass;
  State next;
  next.x = s.x + kTau * s.x_dot;
  next.x_dot = s.x_dot + kTau * x_acc;
  next.theta = s.theta + kTau * s.theta_dot;
  next.theta_dot = s.theta_dot + kTau * theta_acc;
  return next;
}

void expect_state_and_observation(const State& expected, const State& actual, const float* obs) {
  EXPECT_DOUBLE_EQ(actual.x, expected.x);
  EXPECT_DOUBLE_EQ(actual.x_dot, expected.x_dot);
  EXPECT_DOUBLE_EQ(actual.theta, expected.theta);
  EXPECT_DOUBLE_EQ(actual.theta_dot, expected.theta_dot);
  EXPECT_FLOAT_EQ(obs[0], static_cast<float>(expected.x));
  EXPECT_FLOAT_EQ(obs[1], static_cast<float>(expected.x_dot));
  EXPECT_FLOAT_EQ(obs[2], static_cast<float>(expected.theta));
  EXPECT_FLOAT_EQ(obs[3], static_cast<float>(expected.theta_dot));
}

TEST(CartPoleTest, StepFromFixedStateMatchesEquations) {
  const State start{0.1, -0.2, 0.05, 0.3};
  for (int64_t action : {0, 1}) {
    SCOPED_TRACE(action);
    CartPole env;
    float obs[4];
    env.reset(7, obs);
    env.set_state(start);
    const StepResult result = env.step(discrete(action), obs);
    expect_state_and_observation(expected_step(start, action), env.state(), obs);
    EXPECT_EQ(result.reward, 1.0f);
    EXPECT_FALSE(result.terminated);
    EXPECT_FALSE(result.truncated);
  }
}

TEST(CartPoleTest, StepFromRestWorkedByHand) {
  // From rest, upright: temp = F / 1.1, theta_acc = -temp / (0.5 * (4/3 - 0.1/1.1)),
  // x_acc = temp - 0.05 * theta_acc / 1.1. With F = +10: temp = 9.0909..., theta_acc =
  // -14.634146..., x_acc = 9.7560975...; only the velocities move in one Euler step.
  CartPole env;
  float obs[4];
  env.reset(1, obs);
  env.set_state({0.0, 0.0, 0.0, 0.0});
  env.step(discrete(1), obs);
  EXPECT_DOUBLE_EQ(env.state().x, 0.0);
  EXPECT_DOUBLE_EQ(env.state().theta, 0.0);
  EXPECT_NEAR(env.state().x_dot, 0.02 * 9.75609756097561, 1e-14);
  EXPECT_NEAR(env.state().theta_dot, 0.02 * -14.634146341463415, 1e-14);
}

TEST(CartPoleTest, TerminatesJustPastXThreshold) {
  // With zero velocities Euler leaves x and theta unchanged for one step.
  const double just_past = std::nextafter(2.4, 3.0);
  struct Case {
    State state;
    bool terminated;
  };
  const Case cases[] = {
      {{2.4, 0.0, 0.0, 0.0}, false},
      {{just_past, 0.0, 0.0, 0.0}, true},
      {{-2.4, 0.0, 0.0, 0.0}, false},
      {{-just_past, 0.0, 0.0, 0.0}, true},
      {{0.0, 0.0, kThetaThreshold, 0.0}, false},
      {{0.0, 0.0, std::nextafter(kThetaThreshold, 1.0), 0.0}, true},
      {{0.0, 0.0, -kThetaThreshold, 0.0}, false},
      {{0.0, 0.0, -std::nextafter(kThetaThreshold, 1.0), 0.0}, true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::to_string(c.state.x) + " " + std::to_string(c.state.theta));
    CartPole env;
    float obs[4];
    env.reset(0, obs);
    env.set_state(c.state);
    const StepResult result = env.step(discrete(0), obs);
    EXPECT_EQ(result.terminated, c.terminated);
    EXPECT_EQ(result.reward, 1.0f);  // The terminating step still earns 1.
  }
}

TEST(CartPoleTest, MovingPastThresholdTerminates) {
  // x = 2.39 moving at 1 m/s reaches 2.41 after one step.
  CartPole env;
  float obs[4];
  env.reset(0, obs);
  env.set_state({2.39, 1.0, 0.0, 0.0});
  EXPECT_TRUE(env.step(discrete(1), obs).terminated);
  env.set_state({2.37, 1.0, 0.0, 0.0});
  EXPECT_FALSE(env.step(discrete(1), obs).terminated);
}

TEST(CartPoleTest, StepsAfterTerminationEarnZeroUntilReset) {
  CartPole env;
  float obs[4];
  env.reset(3, obs);
  env.set_state({3.0, 0.0, 0.0, 0.0});
  StepResult result = env.step(discrete(0), obs);
  EXPECT_TRUE(result.terminated);
  EXPECT_EQ(result.reward, 1.0f);
  result = env.step(discrete(0), obs);
  EXPECT_TRUE(result.terminated);
  EXPECT_EQ(result.reward, 0.0f);
  result = env.step(discrete(1), obs);
  EXPECT_EQ(result.reward, 0.0f);
  env.reset(std::nullopt, obs);
  env.set_state({3.0, 0.0, 0.0, 0.0});
  EXPECT_EQ(env.step(discrete(0), obs).reward, 1.0f);
}

TEST(CartPoleTest, TruncatesAtExactly500Steps) {
  CartPole env;
  float obs[4];
  env.reset(11, obs);
  for (int t = 1; t < 500; ++t) {
    env.set_state({0.0, 0.0, 0.0, 0.0});  // Keep balancing whatever the dynamics do.
    const StepResult result = env.step(discrete(t % 2), obs);
    ASSERT_FALSE(result.truncated) << "step " << t;
    ASSERT_FALSE(result.terminated) << "step " << t;
  }
  env.set_state({0.0, 0.0, 0.0, 0.0});
  StepResult result = env.step(discrete(0), obs);
  EXPECT_TRUE(result.truncated);
  EXPECT_FALSE(result.terminated);

  // Both flags on the same step.
  env.reset(11, obs);
  for (int t = 1; t < 500; ++t) {
    env.set_state({0.0, 0.0, 0.0, 0.0});
    env.step(discrete(t % 2), obs);
  }
  env.set_state({2.5, 0.0, 0.0, 0.0});
  result = env.step(discrete(0), obs);
  EXPECT_TRUE(result.truncated);
  EXPECT_TRUE(result.terminated);
  EXPECT_EQ(env.elapsed_steps(), 500);
}

TEST(CartPoleTest, ResetIsDeterministicPerSeed) {
  CartPole a;
  CartPole b;
  float obs_a[4];
  float obs_b[4];
  a.reset(42, obs_a);
  b.reset(42, obs_b);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(obs_a[i], obs_b[i]);
  EXPECT_EQ(a.state().x, b.state().x);
  EXPECT_EQ(a.state().theta_dot, b.state().theta_dot);

  b.reset(43, obs_b);
  bool differs = false;
  for (int i = 0; i < 4; ++i) differs = differs || obs_a[i] != obs_b[i];
  EXPECT_TRUE(differs);

  // A reset without a seed continues the generator: a second episode differs from the first,
  // and matches the second episode of another env seeded the same way.
  float first[4];
  a.reset(42, first);
  a.reset(std::nullopt, obs_a);
  differs = false;
  for (int i = 0; i < 4; ++i) differs = differs || obs_a[i] != first[i];
  EXPECT_TRUE(differs);
  b.reset(42, obs_b);
  b.reset(std::nullopt, obs_b);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(obs_a[i], obs_b[i]);
}

TEST(CartPoleTest, InitialStateWithinBounds) {
  CartPole env;
  float obs[4];
  env.reset(5, obs);
  for (int episode = 0; episode < 2000; ++episode) {
    env.reset(std::nullopt, obs);
    const State& s = env.state();
    for (double v : {s.x, s.x_dot, s.theta, s.theta_dot}) {
      ASSERT_GE(v, -0.05);
      ASSERT_LT(v, 0.05);
    }
    EXPECT_EQ(obs[0], static_cast<float>(s.x));
    EXPECT_EQ(obs[3], static_cast<float>(s.theta_dot));
    ASSERT_TRUE(env.spec().observation_space.contains(obs));
  }
}

TEST(CartPoleTest, ObservationsStayInSpace) {
  CartPole env;
  float obs[4];
  core::Rng actions(9);
  env.reset(9, obs);
  for (int t = 0; t < 20000; ++t) {
    const StepResult result = env.step(discrete(core::uniform_index(actions, 2)), obs);
    ASSERT_TRUE(env.spec().observation_space.contains(obs)) << "step " << t;
    if (result.terminated || result.truncated) env.reset(std::nullopt, obs);
  }
}

TEST(CartPoleTest, InvalidActionThrowsNamingEnvAndValue) {
  CartPole env;
  float obs[4];
  env.reset(0, obs);
  for (int64_t bad : {-1, 2, 7}) {
    try {
      env.step(discrete(bad), obs);
      ADD_FAILURE() << "no exception for action " << bad;
    } catch (const std::invalid_argument& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("CartPole-v1"), std::string::npos) << message;
      EXPECT_NE(message.find(std::to_string(bad)), std::string::npos) << message;
    }
  }
}

}  // namespace
}  // namespace concord::envs
