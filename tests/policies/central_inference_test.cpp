// The `central_inference` policy (GA3C) and its parts: the bounded queue, the active-thread gate,
// the dynamic adjustment, exact segments against a counting env, learning CartPole, shutdown and
// errors.
#include "concord/policies/central_inference.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <mutex>
#include <set>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "concord/algos/a2c.h"
#include "concord/core/blas.h"
#include "concord/core/config.h"
#include "concord/policies/policy_registry.h"
#include "concord/policies/runtime/dynamic_adjustment.h"
#include "concord/policies/single.h"
#include "envs/fake_env.h"
#include "hang_guard.h"
#include "learning_outcome.h"
#include "policies/policy_fakes.h"

namespace concord::policies {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

// ---------------------------------------------------------------------------------------------
// DynamicAdjustment

TEST(DynamicAdjustment, KeepsMovesThatRaiseTpsAndRevertsOthers) {
  const runtime::ThreadCounts maximum{4, 2, 2};
  runtime::DynamicAdjustment adjustment(maximum, maximum, /*seed=*/5);
  runtime::ThreadCounts counts = adjustment.next(10.0);  // the baseline measured: a move is tried
  std::set<int> agent_counts;
  for (int i = 0; i < 50; ++i) {
    EXPECT_TRUE(counts.agents >= 1 && counts.agents <= 4) << counts.to_string();
    EXPECT_TRUE(counts.predictors >= 1 && counts.predictors <= 2) << counts.to_string();
    EXPECT_TRUE(counts.trainers >= 1 && counts.trainers <= 2) << counts.to_string();
    agent_counts.insert(counts.agents);
    counts = adjustment.next(20.0 + i);  // always better: kept, and the next move tried
  }
  EXPECT_EQ(adjustment.decisions(), 50);
  EXPECT_EQ(adjustment.kept(), 50);
  EXPECT_GT(agent_counts.size(), 1u);  // it walks

  runtime::DynamicAdjustment reverting(maximum, maximum, 6);
  reverting.next(10.0);
  EXPECT_EQ(reverting.next(5.0), maximum);  // worse: back to the baseline, measured afresh
  EXPECT_EQ(reverting.kept(), 0);
  EXPECT_EQ(reverting.decisions(), 1);
  EXPECT_THROW(runtime::DynamicAdjustment(maximum, runtime::ThreadCounts{5, 1, 1}, 0), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------------
// The policy against a counting env and a recording learner

using testing::CountingEnv;
using testing::RecordingLearner;

// A fresh counting env id in Registry::global(). Observation [steps into the episode, instance];
// never terminates; truncated by a time limit of 4 steps; reward 1. Instances count the envs a
// registered id made, so agent a's envs are instances 2a and 2a + 1 when agents own 2 envs each.
std::string register_counting_env() { return testing::register_counting_env("Central"); }

nn::ActorCriticConfig small_network(int64_t obs_dim, int64_t actions) {
  nn::ActorCriticConfig config;
  config.obs_shape = {obs_dim};
  config.action_dim = actions;
  config.hidden_sizes = {8};
  return config;
}

envs::VectorEnvConfig env_config(const std::string& id, int num_envs) {
  envs::VectorEnvConfig config;
  config.env_id = id;
  config.num_envs = num_envs;
  config.seed = 3;
  return config;
}

CentralInferenceConfig small_policy(int agents) {
  CentralInferenceConfig config;
  config.agents = agents;
  config.training_batch = 1;
  config.max_policy_lag = 1;
  config.wait_timeout_seconds = 20.0;
  return config;
}

TEST(CentralInference, SegmentsHoldExactlyWhatEachAgentsEnvsDid) {
  constexpr int kAgents = 3;
  constexpr int64_t kSteps = 5;  // T; the time limit truncates every 4 steps
  RecordingLearner learner(kSteps, small_network(2, 2));
  CentralInferencePolicy policy(small_policy(kAgents), env_config(register_counting_env(), 2 * kAgents), learner,
                                torch::kCPU);
  TrainingState state;
  const int64_t total_steps = 2 * kAgents * kSteps * 8;  // 24 segments of 10 steps
  policy.train(state, total_steps, /*checkpoint_interval_steps=*/1'000'000, {});

  EXPECT_EQ(state.global_step, total_steps);
  EXPECT_EQ(state.updates, 24);
  ASSERT_EQ(learner.rollouts.size(), 24u);
  torch::NoGradGuard no_grad;
  nn::ActorCritic model = learner.model();  // never updated: every prediction came from it
  const auto value_of = [&](float step, float instance) {
    return model->value(torch::tensor({{step, instance}})).item<float>();
  };
  std::map<int, int> segments_of_instance;
  std::set<int> agents_seen;
  for (const algos::Rollout& rollout : learner.rollouts) {
    ASSERT_EQ(rollout.num_steps(), kSteps);
    ASSERT_EQ(rollout.num_envs(), 2);
    for (int64_t b = 0; b < 2; ++b) {
      const int instance = static_cast<int>(rollout.observations[0][b][1].item<float>());
      const int k = segments_of_instance[instance]++;  // this env's k-th segment, in order
      agents_seen.insert(instance / 2);
      EXPECT_EQ(instance % 2, b) << "an agent's envs keep their columns";
      for (int64_t t = 0; t < kSteps; ++t) {
        const int64_t step = kSteps * k + t;  // env steps before this one
        const float observed = static_cast<float>(step % 4);
        EXPECT_EQ(rollout.observations[t][b][0].item<float>(), observed) << "instance " << instance << " t " << t;
        EXPECT_EQ(rollout.observations[t][b][1].item<float>(), static_cast<float>(instance));
        // Predictions were routed back to the agent that asked: they match its observations.
        EXPECT_NEAR(rollout.values[t][b].item<float>(), value_of(observed, static_cast<float>(instance)), 1e-5);
        const auto evaluation =
            model->evaluate(rollout.observations[t].narrow(0, b, 1), rollout.actions[t].narrow(0, b, 1));
        EXPECT_NEAR(rollout.log_probs[t][b].item<float>(), evaluation.log_prob.item<float>(), 1e-5);
        EXPECT_EQ(rollout.rewards[t][b].item<float>(), 1.0f);
        EXPECT_EQ(rollout.terminated[t][b].item<float>(), 0.0f);
        const bool truncated = (step + 1) % 4 == 0;
        EXPECT_EQ(rollout.truncated[t][b].item<float>(), truncated ? 1.0f : 0.0f);
        EXPECT_EQ(rollout.final_observations[t][b][0].item<float>(), truncated ? 4.0f : 0.0f);
        EXPECT_EQ(rollout.final_observations[t][b][1].item<float>(), truncated ? static_cast<float>(instance) : 0.0f);
      }
      const float next = static_cast<float>((kSteps * (k + 1)) % 4);
      EXPECT_NEAR(rollout.bootstrap_value[b].item<float>(), value_of(next, static_cast<float>(instance)), 1e-5);
      EXPECT_EQ(rollout.next_observations[b][0].item<float>(), next);
      EXPECT_EQ(rollout.next_observations[b][1].item<float>(), static_cast<float>(instance));
    }
  }
  EXPECT_EQ(agents_seen, (std::set<int>{0, 1, 2}));  // every agent's segments reached the learner
  EXPECT_EQ(segments_of_instance.size(), 6u);
  for (double progress : learner.progresses) EXPECT_LE(progress, 1.0);
  EXPECT_DOUBLE_EQ(learner.progresses.back(), 1.0);
}

TEST(CentralInference, TrainingBatchConcatenatesSegmentsAndReportsMetrics) {
  RecordingLearner learner(4, small_network(2, 2));
  CentralInferenceConfig config = small_policy(4);
  config.training_batch = 3;
  config.predictors = 2;
  config.trainers = 2;
  CentralInferencePolicy policy(config, env_config(register_counting_env(), 8), learner, torch::kCPU);
  TrainingState state;
  std::vector<algos::Metrics> reports;
  TrainingCallbacks callbacks;
  callbacks.on_update = [&](const TrainingState&, const algos::Metrics& metrics, const core::EpisodeStats&) {
    reports.push_back(metrics);
  };
  int episodes = 0;
  callbacks.on_episode = [&](double episode_return, int64_t length) {
    EXPECT_EQ(episode_return, 4.0);
    EXPECT_EQ(length, 4);
    ++episodes;
  };
  policy.train(state, /*total_steps=*/8 * 4 * 12, 1'000'000, callbacks);  // 48 segments of 8 steps
  int64_t trained = 0;
  for (const algos::Rollout& rollout : learner.rollouts) {
    trained += rollout.num_steps() * rollout.num_envs();
    EXPECT_EQ(rollout.num_envs() % 2, 0);
    EXPECT_LE(rollout.num_envs(), 6);  // 3 segments of 2 envs, fewer only for the last ones
  }
  EXPECT_EQ(trained, 8 * 4 * 12);
  EXPECT_EQ(state.global_step, trained);
  EXPECT_EQ(episodes, 8 * 12);  // every env finishes 12 episodes of 4 steps
  ASSERT_FALSE(reports.empty());
  for (const char* name :
       {"charts/SPS", "charts/PPS", "charts/TPS", "charts/policy_lag", "charts/prediction_batch_size",
        "charts/prediction_queue_length", "charts/training_queue_length", "charts/episodic_return"}) {
    EXPECT_TRUE(reports.back().count(name)) << name;
  }
  EXPECT_GE(reports.back().at("charts/prediction_batch_size"), 2.0);
  EXPECT_GE(reports.back().at("charts/policy_lag"), 0.0);
}

// A run of 2^40 steps that should_stop ends after 5 updates.
TEST(CentralInference, ShouldStopEndsAnEndlessRunWithoutHanging) {
  RecordingLearner learner(5, small_network(2, 2));
  learner.record = false;
  CentralInferencePolicy policy(small_policy(4), env_config(register_counting_env(), 8), learner, torch::kCPU);
  TrainingState state;
  TrainingCallbacks callbacks;
  callbacks.should_stop = [&] { return state.updates >= 5; };
  test::ends_within(std::chrono::seconds(120), "a run asked to stop",
                    [&] { policy.train(state, /*total_steps=*/int64_t{1} << 40, 1'000'000, callbacks); });
  EXPECT_GE(state.updates, 5);
}

TEST(CentralInference, DynamicAdjustmentMakesDecisionsWithoutHanging) {
  RecordingLearner learner(5, small_network(2, 2));
  learner.record = false;
  learner.update_sleep = milliseconds(1);
  CentralInferenceConfig config = small_policy(4);
  config.predictors = 2;
  config.trainers = 2;
  config.dynamic_adjustment = true;
  config.adjust_interval_seconds = 0.2;
  config.wait_timeout_seconds = 5.0;
  CentralInferencePolicy policy(config, env_config(register_counting_env(), 8), learner, torch::kCPU);
  TrainingState state;
  double adjustments = 0.0;
  std::set<double> agent_counts;
  TrainingCallbacks callbacks;
  callbacks.on_update = [&](const TrainingState&, const algos::Metrics& metrics, const core::EpisodeStats&) {
    adjustments = metrics.at("charts/adjustments");
    agent_counts.insert(metrics.at("charts/active_agents"));
  };
  const auto start = Clock::now();
  callbacks.should_stop = [&] { return Clock::now() - start > std::chrono::milliseconds(2500); };
  test::ends_within(std::chrono::seconds(120), "a run with dynamic adjustment",
                    [&] { policy.train(state, int64_t{1} << 40, 1'000'000, callbacks); });
  EXPECT_GE(adjustments, 3.0);
  EXPECT_GT(state.updates, 0);
}

TEST(CentralInference, AnEnvFailureStopsEveryThreadAndIsRethrown) {
  envs::testing::FakeEnvOptions options;
  options.throw_at_step = 30;
  RecordingLearner learner(5, small_network(4, 3));
  learner.record = false;
  CentralInferencePolicy policy(small_policy(2), env_config(envs::testing::register_fake_env(options), 4), learner,
                                torch::kCPU);
  TrainingState state;
  EXPECT_THAT([&] { policy.train(state, int64_t{1} << 40, 1'000'000, {}); },
              ::testing::ThrowsMessage<std::runtime_error>(::testing::HasSubstr("FakeEnv: planned failure")));
}

TEST(CentralInference, AStuckLearnerIsATimeoutNamingTheQueue) {
  RecordingLearner learner(2, small_network(2, 2));
  learner.record = false;
  learner.update_sleep = milliseconds(1500);
  CentralInferenceConfig config = small_policy(2);
  config.queue_capacity = 1;
  config.wait_timeout_seconds = 0.2;
  CentralInferencePolicy policy(config, env_config(register_counting_env(), 2), learner, torch::kCPU);
  TrainingState state;
  EXPECT_THAT([&] { policy.train(state, int64_t{1} << 40, 1'000'000, {}); },
              ::testing::ThrowsMessage<std::runtime_error>(::testing::HasSubstr("for the training slots to free up")));
}

// With max_policy_lag = 0 collection and learning take turns: every segment of an update was
// started with the parameters of the update before it, so the lag is exactly 0.
TEST(CentralInference, NoPolicyLagWhenCollectionAndLearningTakeTurns) {
  RecordingLearner learner(3, small_network(2, 2));
  learner.record = false;
  CentralInferenceConfig config = small_policy(4);
  config.training_batch = 2;
  config.max_policy_lag = 0;
  CentralInferencePolicy policy(config, env_config(register_counting_env(), 8), learner, torch::kCPU);
  TrainingState state;
  std::vector<double> lags;
  TrainingCallbacks callbacks;
  callbacks.on_update = [&](const TrainingState&, const algos::Metrics& metrics, const core::EpisodeStats&) {
    lags.push_back(metrics.at("charts/policy_lag"));
  };
  // 4 agents x 2 envs x 3 steps: segments of 6 steps, updates of 12.
  policy.train(state, /*total_steps=*/12 * 40, 1'000'000, callbacks);
  ASSERT_EQ(lags.size(), 40u);
  for (double lag : lags) EXPECT_EQ(lag, 0.0);
}

// One agent taking turns with the learner (max_policy_lag 0) is `single` on other threads: the
// same env seeds, the same action draws (the predictor continues the process generator), the
// same truncation and bootstrap values, the same updates. After 60 A2C updates the parameters are
// equal bit for bit, on CartPole (episodes that terminate) and on a counting env whose time limit
// truncates every 4 steps.
TEST(CentralInference, OneAgentTakingTurnsWithTheLearnerTrainsExactlyAsSingle) {
  const auto flat = [](nn::ActorCritic& model) {
    std::vector<torch::Tensor> parameters;
    for (const torch::Tensor& parameter : model->parameters()) parameters.push_back(parameter.detach().flatten());
    return torch::cat(parameters);
  };
  const auto train = [&](bool central, bool counting) {
    torch::manual_seed(11);
    algos::A2cConfig a2c;
    a2c.network = small_network(counting ? 2 : 4, 2);
    a2c.network.hidden_sizes = {16, 16};
    a2c.num_steps = 5;
    a2c.anneal_lr = true;
    algos::A2c learner(a2c);
    nn::ActorCritic model = learner.model();
    const torch::Tensor initial = flat(model);
    const envs::VectorEnvConfig envs = env_config(counting ? register_counting_env() : "CartPole-v1", 4);
    TrainingState state;
    const int64_t total_steps = 4 * 5 * 60;
    if (central) {
      CentralInferenceConfig config;
      config.agents = 1;
      config.max_policy_lag = 0;
      CentralInferencePolicy(config, envs, learner, torch::kCPU).train(state, total_steps, 1'000'000, {});
    } else {
      SinglePolicy(std::make_unique<envs::VectorEnv>(envs), learner, torch::kCPU)
          .train(state, total_steps, 1'000'000, {});
    }
    EXPECT_EQ(state.updates, 60);
    const torch::Tensor trained = flat(model);
    EXPECT_FALSE(torch::equal(trained, initial)) << "training moved the parameters";
    return trained;
  };
  for (const bool counting : {false, true}) {
    const torch::Tensor single = train(false, counting);
    const torch::Tensor central = train(true, counting);
    ASSERT_EQ(single.sizes(), central.sizes());
    EXPECT_TRUE(torch::equal(single, central)) << (counting ? "counting env" : "CartPole") << ": largest difference "
                                               << (single - central).abs().max().item<float>();
  }
}

// With one segment per agent per update (training_batch 0) every update holds the next segment of
// each agent in agent order, however the agents are scheduled: here the k-th update is every env's
// k-th segment, at the default lag and with an agent slowed by its env.
TEST(CentralInference, EveryUpdateIsTheNextSegmentOfEachAgentInAgentOrder) {
  constexpr int kAgents = 3;
  constexpr int64_t kSteps = 3;
  for (const int lag : {0, 1, 2}) {
    RecordingLearner learner(kSteps, small_network(2, 2));
    CentralInferenceConfig config = small_policy(kAgents);
    config.training_batch = 0;
    config.max_policy_lag = lag;
    config.trainers = 2;
    CentralInferencePolicy policy(config, env_config(register_counting_env(), 2 * kAgents), learner, torch::kCPU);
    TrainingState state;
    constexpr int kUpdates = 30;
    policy.train(state, /*total_steps=*/2 * kAgents * kSteps * kUpdates, 1'000'000, {});
    ASSERT_EQ(learner.rollouts.size(), static_cast<size_t>(kUpdates)) << "lag " << lag;
    for (size_t k = 0; k < learner.rollouts.size(); ++k) {
      const algos::Rollout& rollout = learner.rollouts[k];
      ASSERT_EQ(rollout.num_envs(), 2 * kAgents);
      for (int64_t b = 0; b < 2 * kAgents; ++b) {
        EXPECT_EQ(rollout.observations[0][b][1].item<float>(), static_cast<float>(b))
            << "lag " << lag << " update " << k;
        EXPECT_EQ(rollout.observations[0][b][0].item<float>(), static_cast<float>((kSteps * k) % 4))
            << "lag " << lag << " update " << k << " env " << b << ": not its k-th segment";
      }
    }
  }
}

// Whether a row of the network's products rounds the same in a batch of any size (1 to 8 rows): the
// premise of the test below, which holds for 16-wide layers under most OpenBLAS kernel sets but
// not all (the AVX2 ones on an AMD AVX-512 CPU round a row by the batch it is in).
bool rows_round_alike_in_any_batch() {
  torch::manual_seed(5);
  const torch::Tensor rows = torch::randn({8, 16});
  const torch::Tensor weights = torch::randn({16, 16});
  const torch::Tensor all = torch::mm(rows, weights);
  for (int64_t n = 1; n < 8; ++n) {
    if (!torch::equal(torch::mm(rows.slice(0, 0, n), weights), all.slice(0, 0, n))) return false;
  }
  return true;
}

// Four agents taking turns with the learner: each update is one segment of every agent, collected
// with the parameters of the update before, and each agent draws its actions from its own
// generator. With this network nothing left depends on the scheduler, so two runs train the same
// parameters. (A 64-wide layer's rows round differently in a batch of fewer rows, so there the
// predictors' batching, which follows the scheduler, changes a run's last bits.)
TEST(CentralInference, FourAgentsTakingTurnsWithTheLearnerTrainTheSameEveryRun) {
  if (!rows_round_alike_in_any_batch()) {
    GTEST_SKIP() << "OpenBLAS's " << core::blas_kernel()
                 << " kernels round a 16-wide row by the size of its batch, and the predictors' batches follow the "
                    "scheduler; run with OPENBLAS_CORETYPE=SkylakeX (or this CPU's own kernels) to check this";
  }
  const auto train = [&] {
    torch::manual_seed(11);
    algos::A2cConfig a2c;
    a2c.network = small_network(4, 2);
    a2c.network.hidden_sizes = {16, 16};
    a2c.num_steps = 5;
    algos::A2c learner(a2c);
    CentralInferenceConfig config;
    config.agents = 4;
    config.max_policy_lag = 0;
    TrainingState state;
    CentralInferencePolicy(config, env_config("CartPole-v1", 8), learner, torch::kCPU)
        .train(state, /*total_steps=*/8 * 5 * 60, 1'000'000, {});
    EXPECT_EQ(state.updates, 60);
    nn::ActorCritic model = learner.model();
    return testing::flat_parameters_of(model);
  };
  testing::expect_identical_runs(train);
}

TEST(CentralInference, RefusesWhatCannotWork) {
  RecordingLearner learner(5, small_network(2, 2));
  const std::string id = register_counting_env();
  const auto message = [&](const CentralInferenceConfig& config, const envs::VectorEnvConfig& envs) -> std::string {
    try {
      CentralInferencePolicy policy(config, envs, learner, torch::kCPU);
    } catch (const std::invalid_argument& error) {
      return error.what();
    }
    return "no error";
  };
  EXPECT_THAT(message(small_policy(3), env_config(id, 8)),
              ::testing::HasSubstr("env.num_envs = 8 must be divisible by its 3 actors"));
  envs::VectorEnvConfig async = env_config(id, 8);
  async.batch_size = 4;
  EXPECT_THAT(message(small_policy(2), async), ::testing::HasSubstr("set env.batch_size = 0"));
  CentralInferenceConfig bad = small_policy(2);
  bad.prediction_batch = 0;
  bad.trainers = 0;
  EXPECT_THAT(message(bad, env_config(id, 8)),
              ::testing::HasSubstr("trainers=0 must be >= 1; prediction_batch=0 must be >= 1"));
  // Three trainers may each hold 3 of their 4 segments: 8 slots would all be held and none freed.
  CentralInferenceConfig starved = small_policy(2);
  starved.trainers = 3;
  starved.training_batch = 4;
  starved.max_policy_lag = 1;
  EXPECT_THAT(message(starved, env_config(id, 8)),
              ::testing::HasSubstr("max_policy_lag=1 leaves 8 segments in flight, too few for 3 trainers to fill "
                                   "batches of 4"));
}

// Collection and learning take turns unless asked otherwise, and a lag the algorithm cannot
// correct is refused in one line.
TEST(CentralInference, ALagIsOnlyForAnAlgorithmThatCorrectsIt) {
  EXPECT_EQ(CentralInferenceConfig().max_policy_lag, 0);
  RecordingLearner learner(5, small_network(2, 2));
  const std::string id = register_counting_env();
  CentralInferenceConfig config = small_policy(2);
  const auto make = [&] { CentralInferencePolicy(config, env_config(id, 4), learner, torch::kCPU); };
  learner.corrects_lag = false;
  config.max_policy_lag = 0;
  EXPECT_NO_THROW(make());
  config.max_policy_lag = 1;
  EXPECT_THAT(make, ::testing::ThrowsMessage<std::invalid_argument>(
                        ::testing::HasSubstr("max_policy_lag = 1 updates old, which this algorithm does not correct")));
  learner.corrects_lag = true;
  EXPECT_NO_THROW(make());
}

TEST(CentralInference, IsInTheRegistryWithItsKeys) {
  core::ConfigSchema schema;
  declare_policy_keys(schema);
  core::Config config(schema);
  config.set("policy.central_inference.agents", int64_t{3}, "test");
  RecordingLearner learner(5, small_network(2, 2));
  EXPECT_THAT(policy_names(), ::testing::Contains("central_inference"));
  try {
    make_policy("central_inference",
                PolicyContext{config, env_config(register_counting_env(), 8), learner, torch::kCPU});
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& error) {
    EXPECT_THAT(error.what(), ::testing::HasSubstr("must be divisible by its 3 actors"));
  }
}

// ---------------------------------------------------------------------------------------------
// Learning: A2C on CartPole-v1 under central_inference, then a deterministic evaluation.

double deterministic_return(nn::ActorCritic model, int episodes) {
  envs::VectorEnvConfig config;
  config.env_id = "CartPole-v1";
  config.num_envs = episodes;
  config.seed = 1234;
  envs::VectorEnv env(config);
  std::vector<double> returns(static_cast<size_t>(episodes), -1.0);
  int remaining = episodes;
  envs::Batch batch = env.reset();
  torch::NoGradGuard no_grad;
  while (remaining > 0) {
    const auto observations =
        torch::from_blob(const_cast<float*>(batch.observations_as<float>()), {episodes, env.obs_dim()});
    const torch::Tensor actions =
        model->act(observations, /*deterministic=*/true).action.to(torch::kInt64).contiguous();
    batch = env.step(actions.data_ptr<int64_t>());
    for (int row = 0; row < episodes; ++row) {
      if (returns[static_cast<size_t>(row)] < 0.0 && batch.has_final[row]) {
        returns[static_cast<size_t>(row)] = batch.episode_returns[row];
        --remaining;
      }
    }
  }
  double sum = 0.0;
  for (double episode_return : returns) sum += episode_return;
  return sum / episodes;
}

// A uniformly random policy averages about 22 on CartPole-v1. About 5 s a seed on 2 shared
// cores; a learning rate of 2e-3 collapsed.
TEST(CentralInferenceLearning, A2cLearnsCartPole) {
  const auto train = [](uint64_t seed) {
    torch::manual_seed(seed);
    algos::A2cConfig a2c;
    a2c.network = small_network(4, 2);
    a2c.network.hidden_sizes = {64, 64};
    a2c.optimizer = "adam";
    a2c.learning_rate = 1e-3;
    a2c.anneal_lr = true;
    a2c.num_steps = 16;
    a2c.gae_lambda = 1.0;
    a2c.ent_coef = 0.0;
    a2c.vtrace = true;
    algos::A2c learner(a2c);
    CentralInferenceConfig config;
    config.agents = 8;
    config.training_batch = 2;
    config.queue_capacity = 8;  // backpressure on the agents keeps the policy lag near 10 updates
    envs::VectorEnvConfig envs = env_config("CartPole-v1", 16);
    envs.seed = seed;
    CentralInferencePolicy policy(config, envs, learner, torch::kCPU);
    TrainingState state;
    policy.train(state, /*total_steps=*/120'000, 1'000'000'000, {});
    return deterministic_return(learner.model(), 20);
  };
  EXPECT_TRUE(test::learns(train, test::LearningBar{100.0}));
}

}  // namespace
}  // namespace concord::policies
