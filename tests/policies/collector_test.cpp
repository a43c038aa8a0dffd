// The one acting loop (src/concord/policies/runtime/collector.h): the actor's per-env state is
// carried from step to step and rollout to rollout and reset where an episode starts, for every
// sink; a feed-forward actor is handed no state and no episode starts.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include <torch/torch.h>

#include "concord/policies/runtime/evaluation.h"
#include "concord/policies/runtime/rollout_collector.h"
#include "concord/policies/runtime/transition_collector.h"
#include "policy_fakes.h"

namespace concord::policies {
namespace {

using testing::counting_config;
using testing::counting_registry;

// An actor with memory: its state counts, per env, the steps it has acted in since that env's
// episode began. CountingEnv's observation is the number of steps into the episode, so the two
// agree exactly when the collector hands back each env's state and resets it where an episode
// starts. Takes action 0; extras and bootstrap values are zeros.
class StepCountingActor final : public algos::Actor {
 public:
  algos::ActorOutput act(const algos::ActorInput& input, const algos::ActingContext& /*context*/) override {
    const torch::Tensor observed = input.observations.select(1, 0);
    torch::Tensor remembered = remembered_steps(input);
    ++calls;
    if (!remembered.equal(observed)) ++mismatches;
    const int64_t rows = observed.size(0);
    return {torch::zeros({rows}, torch::kInt64),
            {{"log_probs", torch::zeros({rows})}, {"values", torch::zeros({rows})}},
            {{"steps", remembered + 1}}};
  }
  torch::Tensor bootstrap_value(const algos::ActorInput& input) override {
    ++bootstraps;
    if (!remembered_steps(input).equal(input.observations.select(1, 0))) ++mismatches;
    return torch::zeros({input.observations.size(0)});
  }

  int calls = 0, bootstraps = 0, mismatches = 0, first_calls_with_state = 0, starts_missing = 0;

 private:
  torch::Tensor remembered_steps(const algos::ActorInput& input) {
    const int64_t rows = input.observations.size(0);
    if (input.state.empty()) {
      if (calls > 0) ++first_calls_with_state;  // only the very first call may come without state
      return torch::zeros({rows});
    }
    if (!input.episode_starts.defined()) {
      ++starts_missing;
      return input.state.at("steps");
    }
    return input.state.at("steps") * (1 - input.episode_starts);
  }
};

// A feed-forward actor that records what it was handed beside the observations.
class FeedForwardActor final : public algos::Actor {
 public:
  algos::ActorOutput act(const algos::ActorInput& input, const algos::ActingContext& /*context*/) override {
    if (!input.state.empty() || input.episode_starts.defined()) ++handed_memory;
    const int64_t rows = input.observations.size(0);
    return {torch::zeros({rows}, torch::kInt64),
            {{"log_probs", torch::zeros({rows})}, {"values", torch::zeros({rows})}},
            {}};
  }
  torch::Tensor bootstrap_value(const algos::ActorInput& input) override {
    if (!input.state.empty() || input.episode_starts.defined()) ++handed_memory;
    return torch::zeros({input.observations.size(0)});
  }
  int handed_memory = 0;
};

// Episodes of 3 steps (terminated) in 5-step rollouts, so that episodes start inside rollouts and
// carry over from one rollout to the next.
TEST(Collector, ARolloutCarriesEachEnvsStateAcrossStepsAndRolloutsAndResetsItWhereAnEpisodeStarts) {
  const envs::Registry registry = counting_registry(/*terminate_after=*/3);
  envs::VectorEnv env(counting_config(3), registry);
  runtime::RolloutCollector collector(env, /*steps_per_rollout=*/5, torch::kCPU);
  StepCountingActor actor;
  int episodes = 0;
  for (int k = 0; k < 4; ++k) collector.collect(actor, [&](double, int64_t) { ++episodes; });
  EXPECT_EQ(actor.calls, 20);
  EXPECT_EQ(actor.bootstraps, 4);
  EXPECT_EQ(episodes, 3 * (20 / 3));
  EXPECT_EQ(actor.mismatches, 0);
  EXPECT_EQ(actor.first_calls_with_state, 0);
  EXPECT_EQ(actor.starts_missing, 0);
}

TEST(Collector, TransitionsCarryEachEnvsStateAndResetItWhereAnEpisodeStarts) {
  // Truncated by the time limit (4 steps) as well as terminated: both start a new episode.
  for (const int terminate_after : {0, 3}) {
    const envs::Registry registry = counting_registry(terminate_after);
    envs::VectorEnv env(counting_config(2), registry);
    runtime::TransitionCollector collector(env, torch::kCPU);
    StepCountingActor actor;
    for (int t = 0; t < 13; ++t) collector.step(actor, {}, nullptr);
    EXPECT_EQ(actor.calls, 13);
    EXPECT_EQ(actor.mismatches, 0) << "terminate_after " << terminate_after;
    EXPECT_EQ(actor.first_calls_with_state, 0);
    EXPECT_EQ(actor.starts_missing, 0);
  }
}

TEST(Collector, AFeedForwardActorIsHandedNoStateAndNoEpisodeStarts) {
  const envs::Registry registry = counting_registry(/*terminate_after=*/3);
  envs::VectorEnv rollout_env(counting_config(2), registry);
  runtime::RolloutCollector rollouts(rollout_env, /*steps_per_rollout=*/4, torch::kCPU);
  envs::VectorEnv transition_env(counting_config(2), registry);
  runtime::TransitionCollector transitions(transition_env, torch::kCPU);
  FeedForwardActor actor;
  for (int k = 0; k < 3; ++k) rollouts.collect(actor, nullptr);
  for (int t = 0; t < 9; ++t) transitions.step(actor, {}, nullptr);
  EXPECT_EQ(actor.handed_memory, 0);
}

}  // namespace
}  // namespace concord::policies
