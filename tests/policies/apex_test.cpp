// The `apex` policy (Ape-X on threads) against counting environments and a learner that records
// what it is given: every actor's steps reach the learner in order on its own stream, global_step
// counts them exactly, parameters reach the actors, callbacks stay on the calling thread, errors
// stop every thread; then DQN with two actors learns CartPole-v1.
#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "learning_outcome.h"

#include "concord/algos/algorithm_registry.h"
#include "concord/core/config.h"
#include "concord/core/timer.h"
#include "concord/envs/registry.h"
#include "concord/policies/apex.h"
#include "concord/policies/apex_config.h"
#include "concord/policies/policy_registry.h"
#include "concord/policies/runtime/evaluation.h"
#include "policies/policy_fakes.h"

namespace concord::policies {
namespace {

using testing::ApexRecordingLearner;
using testing::CountingEnv;
using testing::expect_fake_priority_inputs;

constexpr int kEnvsPerActor = 2;

// A fresh counting env id in Registry::global(): observation [steps into the episode, instance],
// truncated every 4 steps, reward 1. Instances number the envs in the order they were made, so
// actor a's envs are instances 2a and 2a + 1.
std::string register_counting_env() { return testing::register_counting_env("Apex"); }

envs::VectorEnvConfig env_config(const std::string& id, int num_envs) {
  envs::VectorEnvConfig config;
  config.env_id = id;
  config.num_envs = num_envs;
  config.seed = 7;
  return config;
}

ApexConfig apex_config(int actors) {
  ApexConfig config;
  config.actors = actors;
  config.wait_timeout_seconds = 20.0;
  return config;
}

float value(const algos::TensorMap& step, const char* field, int64_t row, int64_t column) {
  return step.at(field)[row][column].item<float>();
}

TEST(Apex, EveryActorsStepsReachTheLearnerInOrderOnItsOwnStream) {
  constexpr int kActors = 3;
  ApexRecordingLearner learner(/*learning_starts=*/30);
  // A slow learner that the actors wait for, so that every actor takes steps however late its
  // thread starts.
  learner.update_sleep = std::chrono::microseconds(100);
  ApexConfig config = apex_config(kActors);
  config.max_env_steps_per_update = 2;
  ApexPolicy policy(config, env_config(register_counting_env(), kEnvsPerActor * kActors), learner, torch::kCPU);
  TrainingState state;
  constexpr int64_t kTotal = 600;
  policy.train(state, kTotal, /*checkpoint_interval_steps=*/1'000'000, {});

  EXPECT_EQ(state.global_step, kTotal);
  EXPECT_EQ(learner.observed_rows.load(), kTotal);
  EXPECT_EQ(learner.overlapping_observes.load(), 0);
  std::map<int, int64_t> steps_of_stream;
  namespace f = algos::transition;
  for (const auto& [stream, step] : learner.steps) {
    ASSERT_EQ(step.at(f::kObservations).size(0), kEnvsPerActor);
    const int64_t k = steps_of_stream[stream]++;  // this actor's k-th step
    for (int64_t b = 0; b < kEnvsPerActor; ++b) {
      EXPECT_EQ(value(step, f::kObservations, b, 1), static_cast<float>(kEnvsPerActor * stream + b))
          << "stream " << stream << " holds its actor's envs";
      EXPECT_EQ(value(step, f::kObservations, b, 0), static_cast<float>(k % 4)) << "stream " << stream << " step " << k;
      EXPECT_EQ(value(step, f::kNextObservations, b, 0), static_cast<float>(k % 4 + 1));
      EXPECT_EQ(step.at(f::kTruncated)[b].item<float>(), k % 4 == 3 ? 1.0f : 0.0f);
    }
  }
  ASSERT_EQ(steps_of_stream.size(), static_cast<size_t>(kActors));
  for (int a = 0; a < kActors; ++a) {
    EXPECT_GT(steps_of_stream[a], 0) << "actor " << a;
    // One act() per observed step, with this actor's place among the actors and the run's total.
    const ApexRecordingLearner::Replica& replica = *learner.replicas[static_cast<size_t>(a)];
    ASSERT_EQ(static_cast<int64_t>(replica.contexts.size()), steps_of_stream[a]);
    int64_t previous = -1;
    for (const algos::ActingContext& context : replica.contexts) {
      EXPECT_EQ(context.actor_index, a);
      EXPECT_EQ(context.num_actors, kActors);
      // Ape-X's epsilon of actor a of A, 0.4^(1 + 7 a / (A - 1)), assigned by the policy.
      EXPECT_DOUBLE_EQ(context.epsilon, std::pow(0.4, 1.0 + 7.0 * a / (kActors - 1)));
      EXPECT_EQ(context.total_steps, kTotal);
      EXPECT_FALSE(context.deterministic);
      EXPECT_GE(context.global_step, previous);
      EXPECT_LT(context.global_step, kTotal);
      previous = context.global_step;
    }
  }
  // Updates only once learning_starts was passed, as many as the learner made.
  ASSERT_GT(learner.updates, 0);
  EXPECT_EQ(state.updates, learner.updates);
  EXPECT_GT(learner.update_steps.front(), 30);
  for (const double progress : learner.progresses) EXPECT_LE(progress, 1.0);
}

// Replicas that give the inputs of initial priorities (Ape-X) hand them to observe() with their
// step (the fake's: the step's counter + 0.5 and + 0.25).
TEST(Apex, TheActorsInitialPrioritiesReachObserveWithTheirSteps) {
  ApexRecordingLearner learner(/*learning_starts=*/10);
  learner.replica_priorities = true;
  ApexPolicy policy(apex_config(2), env_config(register_counting_env(), 4), learner, torch::kCPU);
  TrainingState state;
  policy.train(state, 200, 1'000'000, {});
  ASSERT_FALSE(learner.steps.empty());
  for (const auto& [stream, step] : learner.steps) {
    expect_fake_priority_inputs(step, stream);
  }
}

TEST(Apex, PublishedParametersReachTheActorsAndTheStepsPerUpdateAreBounded) {
  ApexRecordingLearner learner(/*learning_starts=*/20);
  learner.update_sleep = std::chrono::microseconds(200);
  const torch::Tensor initial = learner.flat_parameters().values().detach().clone();
  ApexConfig config = apex_config(2);
  config.publish_every = 3;
  config.refresh_every = 4;             // every other step of an actor's 2 envs
  config.max_env_steps_per_update = 2;  // the actors wait for the learner
  ApexPolicy policy(config, env_config(register_counting_env(), 4), learner, torch::kCPU);
  TrainingState state;
  constexpr int64_t kTotal = 1'000;
  policy.train(state, kTotal, 1'000'000, {});

  EXPECT_EQ(state.global_step, kTotal);
  // The bound: from learning_starts on, at most 2 env steps per update, plus the 2 before the
  // first update and one step (of 2 envs) of each actor in flight past the allowance.
  EXPECT_LE(kTotal - 20, 2 * learner.updates + 2 + 2 * 2);
  int first_refreshes_before_any_update = 0;
  for (size_t a = 0; a < 2; ++a) {
    const ApexRecordingLearner::Replica& replica = *learner.replicas[a];
    ASSERT_FALSE(replica.assigned.empty());
    ASSERT_EQ(replica.assigned.size(), replica.updates_at_assign.size());
    first_refreshes_before_any_update += replica.assigned.front().equal(initial);
    int64_t previous = -1;
    for (size_t i = 0; i < replica.assigned.size(); ++i) {
      // Each publication is the learner's parameters after a multiple of publish_every updates.
      const torch::Tensor difference = replica.assigned[i] - initial;
      const auto version = static_cast<int64_t>(std::lround(difference[0].item<double>()));
      EXPECT_TRUE(torch::allclose(difference, torch::full_like(difference, static_cast<double>(version))));
      EXPECT_EQ(version % 3, 0);
      EXPECT_GT(version, previous) << "only a newer publication is copied";
      // The copy is the latest publication: the learner cannot publish while an actor copies, so
      // it is at most the 3 updates of one unpublished period ahead.
      EXPECT_LE(version, replica.updates_at_assign[i]);
      EXPECT_GE(version, replica.updates_at_assign[i] - 3) << "the actors act with the latest publication";
      previous = version;
    }
  }
  // Whichever actor acts first refreshes before any step reached the replay, so before any update;
  // the other may start late enough to take a later publication.
  EXPECT_GE(first_refreshes_before_any_update, 1)
      << "the first actor to act takes the learner's parameters as they are";
}

TEST(Apex, CallbacksRunOnTheCallingThreadAndCheckpointsSeeAPausedReplay) {
  ApexRecordingLearner learner(/*learning_starts=*/8);
  ApexPolicy policy(apex_config(2), env_config(register_counting_env(), 4), learner, torch::kCPU);
  const std::thread::id caller = std::this_thread::get_id();
  int off_thread = 0, checkpoints = 0, inconsistent = 0, episodes = 0, reports = 0;
  TrainingCallbacks callbacks;
  callbacks.on_update = [&](const TrainingState&, const algos::Metrics& metrics, const core::EpisodeStats&) {
    off_thread += std::this_thread::get_id() != caller;
    ++reports;
    for (const char* name : {"charts/SPS", "charts/updates_per_env_step", "time/update_seconds"}) {
      EXPECT_EQ(metrics.count(name), 1u) << name;
    }
  };
  callbacks.on_episode = [&](double episode_return, int64_t episode_length) {
    off_thread += std::this_thread::get_id() != caller;
    ++episodes;
    EXPECT_EQ(episode_return, 4.0);
    EXPECT_EQ(episode_length, 4);
  };
  callbacks.on_checkpoint = [&](const TrainingState& now) {
    off_thread += std::this_thread::get_id() != caller;
    ++checkpoints;
    // No actor adds a step while a checkpoint is written: the step count is the replay's.
    const int64_t rows = learner.observed_rows.load();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    inconsistent += rows != now.global_step || learner.observed_rows.load() != rows;
  };
  TrainingState state;
  policy.train(state, 2'000, /*checkpoint_interval_steps=*/200, callbacks);

  EXPECT_EQ(off_thread, 0);
  EXPECT_GT(checkpoints, 0);
  EXPECT_EQ(inconsistent, 0);
  EXPECT_EQ(reports, learner.updates);
  // Every episode of every env (truncated every 4 steps) was handed over by the end.
  std::map<int, int64_t> steps_of_stream;
  for (const auto& step : learner.steps) ++steps_of_stream[step.first];
  int64_t expected = 0;
  for (const auto& [stream, steps] : steps_of_stream) expected += kEnvsPerActor * (steps / 4);
  EXPECT_EQ(episodes, expected);
}

TEST(Apex, AnActorsErrorStopsEveryThreadAndIsRethrownNamingTheActor) {
  ApexRecordingLearner learner(/*learning_starts=*/0);
  ApexPolicy policy(apex_config(2), env_config(register_counting_env(), 4), learner, torch::kCPU);
  learner.replicas[1]->throw_at_call = 50;
  TrainingState state;
  core::Stopwatch clock;
  EXPECT_THAT([&] { policy.train(state, int64_t{1} << 40, 1'000'000, {}); },
              ::testing::ThrowsMessage<std::runtime_error>(
                  ::testing::StrEq("policy 'apex': actor 1 of 2 failed: the simulator crashed")));
  EXPECT_LT(clock.elapsed_seconds(), 10.0);
  // Nothing runs any more: the counts stay where they are.
  const int64_t rows = learner.observed_rows.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(learner.observed_rows.load(), rows);
}

TEST(Apex, ANonFiniteMetricStopsTheRun) {
  ApexRecordingLearner learner(/*learning_starts=*/0);
  learner.nan_at_update = 3;
  ApexPolicy policy(apex_config(2), env_config(register_counting_env(), 2), learner, torch::kCPU);
  TrainingState state;
  EXPECT_THAT([&] { policy.train(state, int64_t{1} << 40, 1'000'000, {}); },
              ::testing::ThrowsMessage<std::runtime_error>(::testing::AllOf(::testing::HasSubstr("losses/fake became"),
                                                                            ::testing::HasSubstr("nan at update 3"))));
  const int64_t rows = learner.observed_rows.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(learner.observed_rows.load(), rows);
}

TEST(Apex, ShouldStopEndsTheRunWithEveryStepCounted) {
  ApexRecordingLearner learner(/*learning_starts=*/0);
  ApexPolicy policy(apex_config(2), env_config(register_counting_env(), 2), learner, torch::kCPU);
  TrainingCallbacks callbacks;
  int reports = 0;
  callbacks.on_update = [&](const TrainingState&, const algos::Metrics&, const core::EpisodeStats&) { ++reports; };
  callbacks.should_stop = [&] { return reports >= 5; };
  TrainingState state;
  policy.train(state, int64_t{1} << 40, 1'000'000, callbacks);
  EXPECT_EQ(state.updates, 5);
  EXPECT_EQ(state.global_step, learner.observed_rows.load());
}

TEST(Apex, AResumeContinuesTheCountAndWaitsForABatch) {
  // As after a resume whose checkpoint did not keep the replay: learning started long ago, but
  // updates return nothing until 40 new rows are in.
  ApexRecordingLearner learner(/*learning_starts=*/10, /*batch_steps=*/40);
  learner.update_sleep = std::chrono::microseconds(100);
  ApexConfig config = apex_config(2);
  config.max_env_steps_per_update = 4;  // the learner updates before the 400 steps are done
  ApexPolicy policy(config, env_config(register_counting_env(), 4), learner, torch::kCPU);
  TrainingState state;
  state.global_step = 1'000;
  state.updates = 77;
  policy.train(state, 1'400, 1'000'000, {});
  EXPECT_EQ(state.global_step, 1'400);
  EXPECT_EQ(learner.observed_rows.load(), 400);
  ASSERT_FALSE(learner.update_steps.empty());
  EXPECT_GT(learner.update_steps.front(), 1'000) << "no update before this run observed a step";
  EXPECT_GE(learner.updates, (400 - 40 - 4 - 2 * 2) / 4) << "updates paced the steps once a batch was in";
  EXPECT_EQ(state.updates, 77 + learner.updates);
}

std::string refusal(algos::Learner& learner, const envs::VectorEnvConfig& env,
                    const std::vector<std::string>& overrides = {}) {
  core::ConfigSchema schema;
  declare_policy_keys(schema);
  core::Config config(schema);
  for (const std::string& assignment : overrides) config.apply_override(assignment);
  try {
    make_policy("apex", PolicyContext{config, env, learner, torch::kCPU});
  } catch (const std::invalid_argument& error) {
    return error.what();
  }
  return "";
}

// policy.apex.epsilon and alpha set every actor's epsilon; one actor follows the schedule.
TEST(ApexConfig, ActorEpsilonsSpreadAsApeXs) {
  ApexConfig config;
  config.epsilon = 0.5;
  config.alpha = 2.0;
  const std::vector<double> epsilons = config.actor_epsilons(3);
  ASSERT_EQ(epsilons.size(), 3u);
  EXPECT_DOUBLE_EQ(epsilons[0], 0.5);
  EXPECT_DOUBLE_EQ(epsilons[1], 0.25);
  EXPECT_DOUBLE_EQ(epsilons[2], 0.125);
  EXPECT_EQ(config.actor_epsilons(1), std::vector<double>{-1.0});
  config.epsilon = 1.5;
  EXPECT_THAT([&] { config.validate(); },
              ::testing::ThrowsMessage<std::invalid_argument>(::testing::HasSubstr("epsilon=1.5 must be in [0, 1]")));
}

TEST(Apex, RefusesWhatItCannotRunInOneLine) {
  const std::string id = register_counting_env();
  testing::RecordingLearner on_policy(4);
  EXPECT_EQ(refusal(on_policy, env_config(id, 4)),
            "policy 'apex' runs off-policy algorithms only (it learns from replay), and this algorithm learns "
            "on-policy from rollouts; use train.policy single, sync_vector, hogwild, central_inference, "
            "async_learner, multi_learner, actor_processes, seed_rl");

  ApexRecordingLearner no_replica(0);
  no_replica.replicable = false;
  EXPECT_EQ(refusal(no_replica, env_config(id, 4)),
            "policy 'apex' acts with copies of the learner's network, which this algorithm cannot make; use "
            "train.policy single or sync_vector");
  ApexRecordingLearner serial(0);
  serial.concurrent = false;
  EXPECT_EQ(refusal(serial, env_config(id, 4)),
            "policy 'apex' stores transitions while the learner updates, which this algorithm does not support; "
            "use train.policy single or sync_vector");

  ApexRecordingLearner learner(0);
  EXPECT_EQ(refusal(learner, env_config(id, 5)),
            "policy 'apex': env.num_envs = 5 must be divisible by its 2 actors (policy.apex.actors)");
  envs::VectorEnvConfig threaded = env_config(id, 4);
  threaded.num_threads = 2;
  EXPECT_THAT(refusal(learner, threaded), ::testing::HasSubstr("set env.num_threads = 1 and env.batch_size = 0"));
  EXPECT_EQ(refusal(learner, env_config(id, 4), {"policy.apex.actors=0", "policy.apex.refresh_every=0"}),
            "invalid policy.apex config: actors=0 must be >= 1; refresh_every=0 must be >= 1");
  EXPECT_EQ(refusal(learner, env_config(id, 4),
                    {"policy.apex.max_env_steps_per_update=2", "policy.apex.min_env_steps_per_update=3"}),
            "invalid policy.apex config: min_env_steps_per_update=3 exceeds max_env_steps_per_update=2: the learner "
            "would wait for steps the actors may not take");
  EXPECT_EQ(refusal(learner, env_config(id, 6), {"policy.apex.actors=3"}), "");
  EXPECT_THAT(policy_names(), ::testing::Contains("apex"));
}

// DQN with n-step returns and prioritised replay (a window per actor's stream) and SAC (its actor's
// slice of the flat buffer) run under apex as the registry builds them.
TEST(Apex, DqnAndSacRunUnderIt) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"dqn",
       {"algo.hidden_sizes=[16]", "algo.dqn.learning_starts=200", "algo.dqn.batch_size=32", "algo.dqn.n_step=3",
        "algo.dqn.prioritized=true", "policy.apex.publish_every=5", "policy.apex.refresh_every=20"}},
      {"sac",
       {"algo.hidden_sizes=[16]", "algo.sac.learning_starts=200", "algo.sac.batch_size=32",
        "policy.apex.publish_every=5", "policy.apex.refresh_every=20"}}};
  for (const auto& [algo, overrides] : cases) {
    torch::manual_seed(3);
    core::ConfigSchema schema;
    algos::declare_algorithm_keys(schema);
    declare_policy_keys(schema);
    core::Config config(schema);
    for (const std::string& assignment : overrides) config.apply_override(assignment);
    envs::VectorEnvConfig env;
    env.env_id = algo == "dqn" ? "CartPole-v1" : "Pendulum-v1";
    env.num_envs = 4;
    const envs::EnvSpec spec = envs::make_env(env.env_id, env.options)->spec();
    std::unique_ptr<algos::Learner> learner =
        algos::make_learner(algo, config, spec.observation_space, spec.action_space);
    std::unique_ptr<Policy> policy = make_policy("apex", PolicyContext{config, env, *learner, torch::kCPU});
    TrainingState state;
    std::vector<double> epsilons;
    TrainingCallbacks callbacks;
    callbacks.on_update = [&](const TrainingState&, const algos::Metrics& metrics, const core::EpisodeStats&) {
      if (metrics.count("charts/epsilon") != 0) epsilons.push_back(metrics.at("charts/epsilon"));
    };
    policy->train(state, 2'000, int64_t{1} << 40, callbacks);
    EXPECT_EQ(state.global_step, 2'000) << algo;
    if (algo == "dqn") {
      // The actors' own epsilons (Ape-X's 0.4 and 0.4^8 for the default 2 actors), averaged, at every update.
      ASSERT_EQ(static_cast<int64_t>(epsilons.size()), state.updates);
      for (const double epsilon : epsilons) EXPECT_NEAR(epsilon, (0.4 + std::pow(0.4, 8.0)) / 2.0, 1e-12);
    } else {
      EXPECT_TRUE(epsilons.empty()) << "SAC explores by its entropy, not an epsilon";
    }
    EXPECT_GT(state.updates, 0) << algo;
    EXPECT_TRUE(learner->flat_parameters().values().isfinite().all().item<bool>()) << algo;
  }
}

// ---------------------------------------------------------------------------------------------
// Learning: DQN with two actors (Ape-X's epsilons 0.4 and 0.4^8) learns CartPole-v1.

// kFastDqn of off_policy_learn_test.cpp (64-64 MLP, batch 64, Adam 1e-3, target every 250
// steps), with at most 2 env steps per update so that the replay ratio does not depend on how
// fast this machine acts.
const std::vector<std::string> kApexDqn = {"algo.hidden_sizes=[64, 64]",    "algo.activation=relu",
                                           "algo.dqn.learning_starts=1000", "algo.dqn.batch_size=64",
                                           "algo.dqn.learning_rate=1e-3",   "algo.dqn.target_network_frequency=250",
                                           "policy.apex.actors=2",          "policy.apex.max_env_steps_per_update=2"};
constexpr int64_t kApexDqnSteps = 30'000;

double train_and_evaluate(uint64_t seed) {
  torch::manual_seed(seed);
  core::ConfigSchema schema;
  algos::declare_algorithm_keys(schema);
  declare_policy_keys(schema);
  core::Config config(schema);
  for (const std::string& assignment : kApexDqn) config.apply_override(assignment);
  envs::VectorEnvConfig env;
  env.env_id = "CartPole-v1";
  env.num_envs = 2;
  env.seed = seed;
  const envs::EnvSpec spec = envs::make_env(env.env_id, env.options)->spec();
  std::unique_ptr<algos::Learner> learner =
      algos::make_learner("dqn", config, spec.observation_space, spec.action_space);
  std::unique_ptr<Policy> policy = make_policy("apex", PolicyContext{config, env, *learner, torch::kCPU});
  TrainingState state;
  policy->train(state, kApexDqnSteps, int64_t{1} << 40, {});
  EXPECT_EQ(state.global_step, kApexDqnSteps);
  EXPECT_GT(state.updates, 0);
  env.seed = 99 + seed;
  const std::vector<double> returns = runtime::evaluate_episodes(*learner, env, 10);
  return std::accumulate(returns.begin(), returns.end(), 0.0) / static_cast<double>(returns.size());
}

TEST(ApexLearning, DqnWithTwoActorsLearnsCartPole) {
  EXPECT_TRUE(test::learns(train_and_evaluate, test::LearningBar{80.0}));
}

}  // namespace
}  // namespace concord::policies
