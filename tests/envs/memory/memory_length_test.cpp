// bsuite's Memory Length (MemoryChain with one bit): the observation sequence step by step, the
// graded answer at step L + 1, and the context drawn from the env's own seeded stream.
#include <array>
#include <set>

#include <gtest/gtest.h>

#include "concord/envs/memory/memory_length.h"
#include "concord/envs/registry.h"

namespace concord::envs {
namespace {

using Observation = std::array<float, 3>;

TEST(MemoryLength, SpecAndBsuiteSweepAreRegistered) {
  const MemoryLength env(5);
  EXPECT_EQ(env.spec().id, "MemoryLength5-v0");
  EXPECT_EQ(env.spec().observation_space.flat_size(), 3);
  EXPECT_EQ(env.spec().action_space.n(), 2);
  EXPECT_EQ(MemoryLength::bsuite_lengths().size(), 23u);
  for (const int length : MemoryLength::bsuite_lengths()) {
    EXPECT_TRUE(make_env(MemoryLength::id_for(length)) != nullptr) << length;
  }
  EXPECT_THROW(MemoryLength(0), std::invalid_argument);
}

TEST(MemoryLength, ObservationsFollowBsuitesOrderAndTheAnswerIsGradedAtStepLPlusOne) {
  constexpr int kLength = 3;
  MemoryLength env(kLength);
  Observation observation{};
  env.reset(7, observation.data());
  const float context = static_cast<float>(2 * env.context() - 1);
  // t = 0 at reset: time 1, the context.
  EXPECT_EQ(observation, (Observation{1.0f, 0.0f, context}));
  // Each step returns the observation of the counter before it advances: t = 0 again, then 1, 2, 3.
  const std::array<Observation, kLength> expected{Observation{1.0f, 0.0f, context},
                                                  Observation{1.0f - 1.0f / 3, 0.0f, 0.0f},
                                                  Observation{1.0f - 2.0f / 3, 0.0f, 0.0f}};
  for (int step = 0; step < kLength; ++step) {
    const StepResult result = env.step(Action{1 - env.context()}, observation.data());
    EXPECT_EQ(observation, expected[static_cast<size_t>(step)]) << "step " << step + 1;
    EXPECT_EQ(result.reward, 0.0f);
    EXPECT_FALSE(result.terminated);
  }
  // Step L + 1: the answer (the wrong one here) is graded, the episode ends, time shows 0.
  const StepResult wrong = env.step(Action{1 - env.context()}, observation.data());
  EXPECT_EQ(wrong.reward, -1.0f);
  EXPECT_TRUE(wrong.terminated);
  EXPECT_EQ(observation, (Observation{0.0f, 0.0f, 0.0f}));
  EXPECT_THROW(env.step(Action{0}, observation.data()), std::logic_error);

  env.reset(std::nullopt, observation.data());
  for (int step = 0; step < kLength; ++step) env.step(Action{0}, observation.data());
  const StepResult right = env.step(Action{env.context()}, observation.data());
  EXPECT_EQ(right.reward, 1.0f);
  EXPECT_TRUE(right.terminated);
}

TEST(MemoryLength, TheContextComesFromTheSeededStreamAndTakesBothValues) {
  MemoryLength a(1), b(1);
  Observation observation{};
  std::set<int> seen;
  a.reset(11, observation.data());
  b.reset(11, observation.data());
  for (int episode = 0; episode < 64; ++episode) {
    EXPECT_EQ(a.context(), b.context());
    seen.insert(a.context());
    a.reset(std::nullopt, observation.data());
    b.reset(std::nullopt, observation.data());
  }
  EXPECT_EQ(seen, (std::set<int>{0, 1}));
}

TEST(MemoryLength, RefusesAnActionOutsideDiscreteTwo) {
  MemoryLength env(2);
  Observation observation{};
  env.reset(0, observation.data());
  EXPECT_THROW(env.step(Action{2}, observation.data()), std::invalid_argument);
}

}  // namespace
}  // namespace concord::envs
