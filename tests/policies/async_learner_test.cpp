// The `async_learner` policy against a tiny env that counts its steps and a learner that stamps
// its update count into its critic, so that every rollout names the parameter version that acted.
#include "concord/policies/async_learner.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "concord/algos/a2c.h"
#include "concord/algos/dqn.h"
#include "concord/core/config.h"
#include "concord/policies/policy_registry.h"
#include "hang_guard.h"
#include "policies/policy_fakes.h"

namespace concord::policies {
namespace {

using testing::RecordingLearner;

constexpr int kEnvs = 2;
constexpr int kSteps = 5;
constexpr int64_t kRolloutSteps = kEnvs * kSteps;

// Observation [steps into the episode], truncated after 4 steps; counts every step of every
// instance in `ticks`, and throws at step `fail_at` (0: never).
class TickingEnv final : public envs::FloatEnv {
 public:
  TickingEnv(std::shared_ptr<std::atomic<int64_t>> ticks, int64_t fail_at)
      : envs::FloatEnv(envs::EnvSpec{"Ticking", envs::Space::box({1}, -100.0f, 100.0f), envs::Space::discrete(2), 4,
                                     std::nullopt}),
        ticks_(std::move(ticks)),
        fail_at_(fail_at) {}

 private:
  void reset_state(float* observation) override {
    step_ = 0;
    observation[0] = 0.0f;
  }
  envs::StepResult step_state(const envs::Action&, float* observation) override {
    if (ticks_->fetch_add(1) + 1 == fail_at_)
      throw std::runtime_error("ticking env broke at step " + std::to_string(fail_at_));
    observation[0] = static_cast<float>(++step_);
    return {1.0f, false, false};
  }
  std::shared_ptr<std::atomic<int64_t>> ticks_;
  int64_t fail_at_;
  int step_ = 0;
};

struct Fixture {
  explicit Fixture(int max_policy_lag, int64_t fail_at = 0) : learner(kSteps) {
    envs::Registry registry;
    registry.add("Ticking", [ticks = ticks, fail_at] { return std::make_unique<TickingEnv>(ticks, fail_at); });
    envs::VectorEnvConfig env_config;
    env_config.env_id = "Ticking";
    env_config.num_envs = kEnvs;
    AsyncLearnerConfig config;
    config.max_policy_lag = max_policy_lag;
    config.wait_timeout_seconds = 20.0;
    learner.stamp_version = true;
    learner.stamp(0);
    policy = std::make_unique<AsyncLearnerPolicy>(config, std::make_unique<envs::VectorEnv>(env_config, registry),
                                                  learner, torch::kCPU, /*seed=*/5);
  }
  // The version that acted in rollout k: every value of it (V = the stamped critic bias).
  int version_of(size_t k) const {
    const torch::Tensor values = learner.rollouts.at(k).values;
    EXPECT_TRUE(torch::all(values == values.flatten()[0]).item<bool>()) << "rollout " << k << " mixes versions";
    return static_cast<int>(values.flatten()[0].item<float>());
  }
  // Every env acted on 0 1 2 3 0 1 ...: no step lost or repeated between rollouts.
  void expect_continuous_observations() const {
    for (size_t k = 0; k < learner.rollouts.size(); ++k) {
      for (int t = 0; t < kSteps; ++t) {
        const float expected = static_cast<float>((static_cast<int>(k) * kSteps + t) % 4);
        EXPECT_EQ(learner.rollouts[k].observations[t][0][0].item<float>(), expected) << "rollout " << k << " t " << t;
      }
    }
  }

  std::shared_ptr<std::atomic<int64_t>> ticks = std::make_shared<std::atomic<int64_t>>(0);
  RecordingLearner learner;
  std::unique_ptr<AsyncLearnerPolicy> policy;
};

// Callbacks that append every update's charts/policy_lag to `lags`.
TrainingCallbacks recording_lags(std::vector<double>& lags) {
  TrainingCallbacks callbacks;
  callbacks.on_update = [&lags](const TrainingState&, const algos::Metrics& metrics, const core::EpisodeStats&) {
    lags.push_back(metrics.at("charts/policy_lag"));
  };
  return callbacks;
}

TEST(AsyncLearner, LagZeroTakesTurnsAndActsWithTheLatestParameters) {
  Fixture f(/*max_policy_lag=*/0);
  // Read inside update(): once it returns and the parameters are published, the collector may
  // start the next rollout, before on_update runs.
  std::vector<int64_t> ticks_at_update;
  f.learner.on_update = [&] { ticks_at_update.push_back(f.ticks->load()); };
  std::vector<double> lags;
  const TrainingCallbacks callbacks = recording_lags(lags);
  TrainingState state;
  test::ends_within(std::chrono::seconds(60), "async_learner lag 0",
                    [&] { f.policy->train(state, 6 * kRolloutSteps, 1'000'000, callbacks); });
  EXPECT_EQ(state.global_step, 6 * kRolloutSteps);
  EXPECT_EQ(state.updates, 6);
  ASSERT_EQ(f.learner.rollouts.size(), 6u);
  for (size_t k = 0; k < 6; ++k) {
    EXPECT_EQ(f.version_of(k), static_cast<int>(k));
    // The collector waits while the learner learns: during update k it has stepped k + 1 rollouts.
    EXPECT_EQ(ticks_at_update[k], static_cast<int64_t>(k + 1) * kRolloutSteps);
    EXPECT_EQ(lags[k], 0.0);
  }
  f.expect_continuous_observations();
}

TEST(AsyncLearner, LagOneCollectsWhileTheLearnerLearns) {
  Fixture f(/*max_policy_lag=*/1);
  // The first update returns only once the collector has stepped a second rollout meanwhile,
  // which it can do only while this update runs (with lag 0 this would time out).
  bool overlapped = false;
  f.learner.on_update = [&] {
    if (overlapped) return;
    for (int i = 0; i < 20'000 && f.ticks->load() < 2 * kRolloutSteps; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    overlapped = f.ticks->load() >= 2 * kRolloutSteps;
  };
  std::vector<double> lags;
  const TrainingCallbacks callbacks = recording_lags(lags);
  TrainingState state;
  test::ends_within(std::chrono::seconds(60), "async_learner lag 1",
                    [&] { f.policy->train(state, 8 * kRolloutSteps, 1'000'000, callbacks); });
  EXPECT_TRUE(overlapped);
  EXPECT_EQ(state.global_step, 8 * kRolloutSteps);
  ASSERT_EQ(f.learner.rollouts.size(), 8u);
  for (size_t k = 0; k < 8; ++k) {
    // Exactly one update behind the one that learns from it, from the second rollout on.
    EXPECT_EQ(f.version_of(k), std::max(0, static_cast<int>(k) - 1)) << "rollout " << k;
    EXPECT_EQ(lags[k], k == 0 ? 0.0 : 1.0);
  }
  f.expect_continuous_observations();
}

// A learner faster than the collector has published newer versions by the time the collector
// looks; rollout k still acts with exactly version k - lag, so a run does not depend on speeds.
TEST(AsyncLearner, EveryRolloutActsWithExactlyTheVersionItsLagNames) {
  for (const int lag : {1, 2, 3}) {
    Fixture f(lag);
    std::vector<double> lags;
    const TrainingCallbacks callbacks = recording_lags(lags);
    TrainingState state;
    test::ends_within(std::chrono::seconds(60), "async_learner exact versions",
                      [&] { f.policy->train(state, 12 * kRolloutSteps, 1'000'000, callbacks); });
    ASSERT_EQ(f.learner.rollouts.size(), 12u);
    for (size_t k = 0; k < 12; ++k) {
      EXPECT_EQ(f.version_of(k), std::max(0, static_cast<int>(k) - lag)) << "lag " << lag << ", rollout " << k;
      EXPECT_EQ(lags[k], std::min(static_cast<double>(k), static_cast<double>(lag))) << "lag " << lag;
    }
    f.expect_continuous_observations();
  }
}

// A2C's update is fast enough to publish newer parameters before the collector copies; with the
// version fixed by the lag, a lag-1 run on CartPole still ends with the same parameters every time.
TEST(AsyncLearner, ALaggedA2cRunTrainsTheSameEveryRun) {
  const auto train = [] {
    torch::manual_seed(11);
    algos::A2cConfig a2c;
    a2c.network.obs_shape = {4};
    a2c.network.action_dim = 2;
    a2c.network.hidden_sizes = {16, 16};
    a2c.num_steps = 5;
    a2c.vtrace = true;
    algos::A2c learner(a2c);
    envs::VectorEnvConfig envs;
    envs.env_id = "CartPole-v1";
    envs.num_envs = 8;
    envs.seed = 3;
    AsyncLearnerConfig config;
    config.max_policy_lag = 1;
    TrainingState state;
    AsyncLearnerPolicy(config, std::make_unique<envs::VectorEnv>(envs), learner, torch::kCPU, /*seed=*/3)
        .train(state, /*total_steps=*/8 * 5 * 60, 1'000'000, {});
    EXPECT_EQ(state.updates, 60);
    nn::ActorCritic model = learner.model();
    return testing::flat_parameters_of(model);
  };
  testing::expect_identical_runs(train);
}

TEST(AsyncLearner, CheckpointsPauseTheCollector) {
  Fixture f(/*max_policy_lag=*/1);
  int checkpoints = 0;
  int64_t stepped_during_checkpoints = 0;
  TrainingCallbacks callbacks;
  callbacks.on_checkpoint = [&](const TrainingState&) {
    ++checkpoints;
    const int64_t before = f.ticks->load();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // a slow save
    stepped_during_checkpoints += f.ticks->load() - before;
  };
  TrainingState state;
  test::ends_within(std::chrono::seconds(60), "async_learner checkpoints",
                    [&] { f.policy->train(state, 10 * kRolloutSteps, kRolloutSteps, callbacks); });
  EXPECT_EQ(checkpoints, 10);
  EXPECT_EQ(stepped_during_checkpoints, 0);
}

TEST(AsyncLearner, ErrorsOnEitherThreadStopBothAndReachTheCaller) {
  {
    Fixture f(/*max_policy_lag=*/1, /*fail_at=*/3 * kRolloutSteps + 4);
    TrainingState state;
    test::ends_within(std::chrono::seconds(60), "async_learner with a failing env", [&] {
      EXPECT_THAT([&] { f.policy->train(state, 10 * kRolloutSteps, 1'000'000, {}); },
                  ::testing::ThrowsMessage<std::runtime_error>(::testing::HasSubstr("ticking env broke at step 34")));
    });
    EXPECT_LE(state.updates, 3);
  }
  {
    Fixture f(/*max_policy_lag=*/1);
    f.learner.nan_at_update = 2;
    TrainingState state;
    test::ends_within(std::chrono::seconds(60), "async_learner with a nan loss", [&] {
      EXPECT_THAT([&] { f.policy->train(state, 10 * kRolloutSteps, 1'000'000, {}); },
                  ::testing::ThrowsMessage<std::runtime_error>(::testing::HasSubstr("losses/fake")));
    });
    EXPECT_EQ(state.updates, 2);
  }
}

TEST(AsyncLearner, RefusesALearnerThatCannotTakeTheLag) {
  core::ConfigSchema schema;
  declare_policy_keys(schema);
  core::Config config(schema);
  RecordingLearner learner(kSteps);
  learner.corrects_lag = false;
  envs::VectorEnvConfig env_config;
  env_config.env_id = "CartPole-v1";
  env_config.num_envs = 2;
  try {
    make_policy("async_learner", PolicyContext{config, env_config, learner, torch::kCPU});
    FAIL() << "expected a refusal";
  } catch (const std::invalid_argument& error) {
    EXPECT_THAT(error.what(), ::testing::HasSubstr("which this algorithm does not correct"));
  }
  config.set("policy.async_learner.max_policy_lag", int64_t{0}, "test");
  EXPECT_NO_THROW(make_policy("async_learner", PolicyContext{config, env_config, learner, torch::kCPU}));
  config.set("policy.async_learner.max_policy_lag", int64_t{-1}, "test");
  EXPECT_THAT(
      [&] {
        make_policy("async_learner", PolicyContext{config, env_config, learner, torch::kCPU});
      },
      ::testing::ThrowsMessage<std::invalid_argument>(::testing::HasSubstr("max_policy_lag=-1 must be >= 0")));
}

// ---- off-policy learners: single's loop with acting on the collector's thread ----

// A run of ApexRecordingLearner (update() adds 1 to every parameter, so a replica's values count
// the updates behind them) on one counting env: learning from step 3, an update every 2 steps.
struct OffPolicyRun {
  explicit OffPolicyRun(int max_policy_lag)
      : registry(testing::counting_registry(/*terminate_after=*/0)),
        learner(/*learning_starts=*/3, /*batch_steps=*/1, /*train_frequency=*/2) {
    initial = learner.flat_parameters().values().reshape({-1})[0].item<float>();
    AsyncLearnerConfig config;
    config.max_policy_lag = max_policy_lag;
    config.wait_timeout_seconds = 30.0;
    policy = std::make_unique<AsyncLearnerPolicy>(
        config, std::make_unique<envs::VectorEnv>(testing::counting_config(1), registry), learner, torch::kCPU, 5);
  }
  envs::Registry registry;
  testing::ApexRecordingLearner learner;
  float initial = 0.0f;
  std::unique_ptr<AsyncLearnerPolicy> policy;
};

TEST(AsyncLearnerOffPolicy, UpdatesAsSingleAndEveryStepActsWithExactlyTheVersionItsLagNames) {
  for (int lag : {0, 1, 2}) {
    OffPolicyRun run(lag);
    TrainingState state;
    test::ends_within(std::chrono::seconds(60), "async_learner off-policy",
                      [&] { run.policy->train(state, /*total_steps=*/20, 1'000'000, {}); });
    EXPECT_EQ(state.global_step, 20);
    // single's schedule: every multiple of 2 beyond 3, after the step that reaches it.
    EXPECT_EQ(run.learner.update_steps, (std::vector<int64_t>{4, 6, 8, 10, 12, 14, 16, 18, 20})) << "lag " << lag;
    EXPECT_EQ(state.updates, 9);
    ASSERT_EQ(run.learner.steps.size(), 20u);
    for (int t = 0; t < 20; ++t) {  // observed in order: the counting env's step t of its episode
      EXPECT_EQ(run.learner.steps[t].second.at(algos::transition::kObservations).item<float>(), t % 4) << t;
    }
    EXPECT_EQ(run.learner.overlapping_observes.load(), 0);
    ASSERT_EQ(run.learner.replicas.size(), 1u);
    const auto& replica = *run.learner.replicas[0];
    ASSERT_EQ(replica.contexts.size(), 20u);
    for (int t = 0; t < 20; ++t) {
      EXPECT_EQ(replica.contexts[t].global_step, t);
      EXPECT_EQ(replica.contexts[t].total_steps, 20);
      // Updates due before step t: one at each of 4, 6, ... up to t.
      const int due = t >= 4 ? (t - 4) / 2 + 1 : 0;
      EXPECT_NEAR(replica.acted_with[t] - run.initial, std::max(0, due - lag), 1e-3) << "lag " << lag << ", step " << t;
    }
  }
}

TEST(AsyncLearnerOffPolicy, ErrorsOnEitherThreadStopBothAndReachTheCaller) {
  {
    OffPolicyRun run(1);
    run.learner.replicas[0]->throw_at_call = 9;
    TrainingState state;
    test::ends_within(std::chrono::seconds(60), "async_learner with a failing actor", [&] {
      EXPECT_THAT([&] { run.policy->train(state, 40, 1'000'000, {}); },
                  ::testing::ThrowsMessage<std::runtime_error>(::testing::HasSubstr("the simulator crashed")));
    });
    EXPECT_LE(state.global_step, 8);
  }
  {
    OffPolicyRun run(1);
    run.learner.nan_at_update = 2;
    TrainingState state;
    test::ends_within(std::chrono::seconds(60), "async_learner with a nan loss", [&] {
      EXPECT_THAT([&] { run.policy->train(state, 40, 1'000'000, {}); },
                  ::testing::ThrowsMessage<std::runtime_error>(::testing::HasSubstr("losses/fake")));
    });
    EXPECT_EQ(state.updates, 2);
  }
}

TEST(AsyncLearnerOffPolicy, ALaggedDqnRunTrainsTheSameEveryRun) {
  const auto train = [] {
    torch::manual_seed(11);
    algos::DqnConfig dqn;
    dqn.network.obs_shape = {4};
    dqn.network.action_dim = 2;
    dqn.network.hidden_sizes = {16, 16};
    dqn.learning_starts = 200;
    dqn.batch_size = 32;
    dqn.train_frequency = 4;
    dqn.target_network_frequency = 100;
    dqn.exploration_steps = 1000;
    algos::Dqn learner(dqn);
    envs::VectorEnvConfig envs;
    envs.env_id = "CartPole-v1";
    envs.num_envs = 2;
    envs.seed = 3;
    AsyncLearnerConfig config;
    config.max_policy_lag = 1;
    TrainingState state;
    AsyncLearnerPolicy(config, std::make_unique<envs::VectorEnv>(envs), learner, torch::kCPU, /*seed=*/3)
        .train(state, /*total_steps=*/2000, 1'000'000, {});
    EXPECT_EQ(state.updates, (2000 - 200) / 4);
    return learner.flat_parameters().values().detach().clone();
  };
  testing::expect_identical_runs(train);
}

TEST(AsyncLearnerOffPolicy, RefusesALearnerWithoutAnActorReplicaOrWithABonus) {
  core::ConfigSchema schema;
  declare_policy_keys(schema);
  core::Config config(schema);
  testing::ApexRecordingLearner learner(0);
  learner.replicable = false;
  envs::VectorEnvConfig env_config;
  env_config.env_id = "CartPole-v1";
  env_config.num_envs = 1;
  EXPECT_THAT(
      [&] {
        make_policy("async_learner", PolicyContext{config, env_config, learner, torch::kCPU});
      },
      ::testing::ThrowsMessage<std::invalid_argument>(
          ::testing::HasSubstr("acts from a copy of the learner's network, which this algorithm cannot make")));
  learner.replicable = true;
  explore::Bonus* bonus = reinterpret_cast<explore::Bonus*>(&learner);  // never called: refused first
  EXPECT_THAT(
      [&] {
        make_policy("async_learner", PolicyContext{config, env_config, learner, torch::kCPU, nullptr, bonus});
      },
      ::testing::ThrowsMessage<std::invalid_argument>(::testing::HasSubstr("explore.bonus = \"none\"")));
}

}  // namespace
}  // namespace concord::policies
