// actor_processes with its ranks as threads (comm::ThreadGroup): rank 0 learns, the others act.
// tests/cli/multi_process_test.cpp runs it as real processes, including an actor killed mid-run.
#include "concord/policies/actor_processes.h"

#include <atomic>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <numeric>
#include <thread>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "comm/unused_communicator.h"
#include "concord/algos/algorithm_registry.h"
#include "concord/comm/thread_group.h"
#include "concord/core/rng.h"
#include "concord/core/torch_thread.h"
#include "concord/envs/registry.h"
#include "concord/policies/policy_registry.h"
#include "concord/policies/runtime/evaluation.h"
#include "concord/sync/sync_registry.h"
#include "learning_outcome.h"

namespace concord::policies {
namespace {

core::Config fast_ppo_config(const std::vector<std::string>& overrides = {}) {
  core::ConfigSchema schema;
  algos::declare_algorithm_keys(schema);
  declare_policy_keys(schema);
  sync::declare_sync_keys(schema);
  core::Config config(schema);
  for (const char* assignment :
       {"algo.ppo.num_steps=32", "algo.ppo.num_minibatches=2", "algo.ppo.update_epochs=4",
        "algo.ppo.learning_rate=3e-3", "algo.ppo.gamma=0.98", "algo.ppo.gae_lambda=0.8", "algo.ppo.ent_coef=0.0"}) {
    config.apply_override(assignment);
  }
  for (const std::string& assignment : overrides) config.apply_override(assignment);
  return config;
}

envs::VectorEnvConfig cartpole(int num_envs, uint64_t seed) {
  envs::VectorEnvConfig env;
  env.env_id = "CartPole-v1";
  env.num_envs = num_envs;
  env.seed = seed;
  return env;
}

struct LearnerOutcome {
  TrainingState state;
  double eval_mean = 0.0;
  algos::Metrics last_metrics;
  std::vector<std::string> errors;
};

// Rank 0 learns and the others act, each rank a thread with its own learner (as in processes).
LearnerOutcome run(int world_size, int64_t steps, const core::Config& config, uint64_t seed = 7) {
  comm::ThreadGroup group(world_size, std::chrono::seconds(60));
  std::vector<std::unique_ptr<comm::Communicator>> communicators;
  for (int rank = 0; rank < world_size; ++rank) communicators.push_back(group.communicator(rank));
  LearnerOutcome outcome;
  outcome.errors.resize(static_cast<size_t>(world_size));
  std::vector<std::thread> threads;
  std::mutex construction;  // the global generator initialises weights: one rank at a time
  for (int rank = 0; rank < world_size; ++rank) {
    // Each rank samples actions and minibatches from its own generator, as a process would.
    threads.push_back(core::torch_thread(core::derive_seed(seed, static_cast<uint64_t>(rank)), [&, rank] {
      std::unique_ptr<comm::Communicator> communicator = std::move(communicators[static_cast<size_t>(rank)]);
      try {
        std::unique_ptr<algos::OnPolicyLearner> learner;
        {
          std::lock_guard<std::mutex> lock(construction);
          torch::manual_seed(seed + static_cast<uint64_t>(rank));
          learner = algos::as_on_policy(
              algos::make_learner("ppo", config, envs::Space::box({4}, -1.0f, 1.0f), envs::Space::discrete(2)));
        }
        auto policy =
            make_policy("actor_processes", PolicyContext{config, cartpole(16, seed + static_cast<uint64_t>(rank)),
                                                         *learner, torch::kCPU, communicator.get()});
        TrainingState state;
        TrainingCallbacks callbacks;
        callbacks.on_update = [&](const TrainingState&, const algos::Metrics& metrics, const core::EpisodeStats&) {
          if (rank == 0) outcome.last_metrics = metrics;
        };
        policy->train(state, steps, int64_t{1} << 40, callbacks);
        if (rank == 0) {
          outcome.state = state;
          const std::vector<double> returns = runtime::evaluate_episodes(*learner, cartpole(4, 99), 10);
          outcome.eval_mean =
              std::accumulate(returns.begin(), returns.end(), 0.0) / static_cast<double>(returns.size());
        }
      } catch (const std::exception& error) {
        outcome.errors[static_cast<size_t>(rank)] = error.what();
      }
    }));
  }
  for (std::thread& thread : threads) thread.join();
  return outcome;
}

// Ranks as threads draw from generators of their own, as processes do; the bar is the threaded
// policies' (random ~22); tests/cli/multi_process_test.cpp holds real processes to 150.
TEST(ActorProcessesLearning, SynchronousActorsFeedOneLearnerThatLearns) {
  const auto train = [](uint64_t seed) {
    const LearnerOutcome outcome = run(3, 100'000, fast_ppo_config(), seed);
    for (const std::string& error : outcome.errors) EXPECT_EQ(error, "");
    // 2 actors x 8 envs x 32 steps = 512 steps per update.
    EXPECT_EQ(outcome.state.global_step % 512, 0);
    EXPECT_EQ(outcome.state.updates, outcome.state.global_step / 512);
    EXPECT_EQ(outcome.last_metrics.at("charts/policy_lag"), 0.0);
    EXPECT_EQ(outcome.last_metrics.at("actors/alive"), 2.0);
    return outcome.eval_mean;
  };
  EXPECT_TRUE(test::learns(train, test::LearningBar{100.0}));
}

TEST(ActorProcessesLearning, AsynchronousActorsLagOneUpdateAndStillLearn) {
  const auto train = [](uint64_t seed) {
    const LearnerOutcome outcome = run(3, 60'000, fast_ppo_config({"policy.actor_processes.synchronous=false"}), seed);
    for (const std::string& error : outcome.errors) EXPECT_EQ(error, "");
    EXPECT_EQ(outcome.last_metrics.at("charts/policy_lag"), 1.0);
    return outcome.eval_mean;
  };
  EXPECT_TRUE(test::learns(train, test::LearningBar{100.0}));
}

// An agent with memory: each actor rank keeps its envs' states, and every segment carries its
// episode starts and the state each env began it with to the learner, which re-runs them.
TEST(ActorProcesses, RecurrentSegmentsCarryTheirStartStatesToTheLearner) {
  const LearnerOutcome outcome = run(3, 4'096, fast_ppo_config({"algo.recurrent=\"lstm\"", "algo.recurrent_size=8"}));
  for (const std::string& error : outcome.errors) EXPECT_EQ(error, "");
  EXPECT_EQ(outcome.state.global_step, 4'096);
  EXPECT_EQ(outcome.state.updates, 8);
  EXPECT_TRUE(std::isfinite(outcome.last_metrics.at("losses/value_loss")));
}

TEST(ActorProcesses, ParametersEveryKUpdatesGrowTheLag) {
  const LearnerOutcome outcome = run(2, 4'096, fast_ppo_config({"policy.actor_processes.broadcast_every=4"}));
  for (const std::string& error : outcome.errors) ASSERT_EQ(error, "");
  // 16 envs x 32 = 512 steps per update: 8 updates; the last rollout used update 4's parameters.
  EXPECT_EQ(outcome.state.updates, 8);
  EXPECT_EQ(outcome.last_metrics.at("charts/policy_lag"), 3.0);
}

// CartPole whose envs all block in step() once `gate->stall_after` steps were taken by the
// registered id's envs together, until the test opens the gate: an actor that stops making
// progress without dying (a SIGSTOPped process), as threads can play it.
struct Gate {
  std::mutex mutex;
  std::condition_variable opened_changed;
  bool opened = false;
  int steps = 0;
  int stall_after = 0;
};

class StallingCartPole final : public envs::FloatEnv {
 public:
  explicit StallingCartPole(std::shared_ptr<Gate> gate) : StallingCartPole(envs::make_env("CartPole-v1"), gate) {}

 private:
  StallingCartPole(std::unique_ptr<envs::Env> inner, std::shared_ptr<Gate> gate)
      : envs::FloatEnv(inner->spec()), inner_(std::move(inner)), gate_(std::move(gate)) {}
  void reset_state(float* observation) override { inner_->reset(reset_seed(), observation); }
  envs::StepResult step_state(const envs::Action& action, float* observation) override {
    std::unique_lock<std::mutex> lock(gate_->mutex);
    if (++gate_->steps > gate_->stall_after) gate_->opened_changed.wait(lock, [&] { return gate_->opened; });
    lock.unlock();
    return inner_->step(action, observation);
  }

  std::unique_ptr<envs::Env> inner_;
  std::shared_ptr<Gate> gate_;
};

// Rank 2 stalls in its third rollout. The learner names it after half the communicator's timeout
// (its receive aborted, not timed out, so rank 1's connection is untouched) and trains on with
// rank 1 to the end; rank 1 never times out although it waits on the learner meanwhile.
TEST(ActorProcesses, AStalledActorIsDroppedAndTheOthersTrainOnToTheEnd) {
  auto gate = std::make_shared<Gate>();
  gate->stall_after = 2 * 4 * 32 + 10;  // 4 envs x 32 steps per rollout: inside the third
  static std::atomic<int> next_id{0};
  const std::string stalling_id = "StallingCartPole-" + std::to_string(next_id.fetch_add(1)) + "-v1";
  envs::Registry::global().add(stalling_id, [gate] { return std::make_unique<StallingCartPole>(gate); });

  const core::Config config = fast_ppo_config();
  // The healthy actor waits up to this for its control; the learner gives up on rank 2 at half.
  comm::ThreadGroup group(3, std::chrono::seconds(4));
  std::vector<std::unique_ptr<comm::Communicator>> communicators;
  for (int rank = 0; rank < 3; ++rank) communicators.push_back(group.communicator(rank));
  std::vector<std::string> errors(3);
  TrainingState learner_state;
  algos::Metrics last_metrics;
  constexpr int64_t kTotal = 40 * 4 * 32;
  std::mutex construction;
  const auto rank_thread = [&](int rank) {
    return core::torch_thread(core::derive_seed(5, static_cast<uint64_t>(rank)), [&, rank] {
      std::unique_ptr<comm::Communicator> communicator = std::move(communicators[static_cast<size_t>(rank)]);
      try {
        std::unique_ptr<algos::OnPolicyLearner> learner;
        {
          std::lock_guard<std::mutex> lock(construction);
          learner = algos::as_on_policy(
              algos::make_learner("ppo", config, envs::Space::box({4}, -1.0f, 1.0f), envs::Space::discrete(2)));
        }
        envs::VectorEnvConfig env = cartpole(8, 11 + static_cast<uint64_t>(rank));
        if (rank == 2) env.env_id = stalling_id;
        auto policy =
            make_policy("actor_processes", PolicyContext{config, env, *learner, torch::kCPU, communicator.get()});
        TrainingState state;
        TrainingCallbacks callbacks;
        callbacks.on_update = [&](const TrainingState&, const algos::Metrics& metrics, const core::EpisodeStats&) {
          if (rank == 0) last_metrics = metrics;
        };
        policy->train(state, kTotal, int64_t{1} << 40, callbacks);
        if (rank == 0) learner_state = state;
      } catch (const std::exception& error) {
        errors[static_cast<size_t>(rank)] = error.what();
      }
    });
  };
  std::thread learner = rank_thread(0), healthy = rank_thread(1), stalled = rank_thread(2);
  learner.join();
  healthy.join();
  {
    std::lock_guard<std::mutex> lock(gate->mutex);
    gate->opened = true;
  }
  gate->opened_changed.notify_all();
  stalled.join();

  EXPECT_EQ(errors[0], "");
  EXPECT_EQ(errors[1], "") << "the healthy actor was served while the learner waited on the stalled one";
  EXPECT_NE(errors[2], "") << "the stalled actor, woken after the run, finds no learner";
  EXPECT_EQ(last_metrics.at("actors/alive"), 1.0);
  // Two rounds of both actors, then rank 1 alone (4 envs x 32 steps per rollout) to the end.
  EXPECT_GE(learner_state.global_step, kTotal);
  EXPECT_EQ(learner_state.global_step, 2 * 2 * 4 * 32 + (learner_state.updates - 2) * 4 * 32);
}

// What another process sends is checked before it sizes anything: an actor whose rollout
// description (its first message, tag 1: 9 fields x [dtype, dims, 6 sizes]) is not one a
// rollout can have is named, and nothing is allocated for it.
TEST(ActorProcesses, ARolloutDescriptionNoRolloutCouldHaveIsRefusedNamingTheActor) {
  const core::Config config = fast_ppo_config();
  const auto learner_error = [&](const torch::Tensor& description) -> std::string {
    comm::ThreadGroup group(2, std::chrono::seconds(10));
    auto learner_comm = group.communicator(0);
    auto actor_comm = group.communicator(1);
    actor_comm->send(description, 0, /*kShapesTag=*/1);
    auto learner = algos::as_on_policy(
        algos::make_learner("ppo", config, envs::Space::box({4}, -1.0f, 1.0f), envs::Space::discrete(2)));
    auto policy = make_policy("actor_processes",
                              PolicyContext{config, cartpole(16, 1), *learner, torch::kCPU, learner_comm.get()});
    TrainingState state;
    try {
      policy->train(state, 1'000, int64_t{1} << 40, {});
    } catch (const comm::CommError& error) {
      return error.what();
    }
    return "";
  };
  torch::Tensor description = torch::full({static_cast<int64_t>(algos::Rollout::kFields), 8}, -1, torch::kInt64);
  description.select(1, 0).fill_(static_cast<int64_t>(torch::kFloat32));
  description.select(1, 1).fill_(1);
  description.select(1, 2).fill_(4);
  torch::Tensor bad_dtype = description.clone();
  bad_dtype[3][0] = 99;
  EXPECT_EQ(learner_error(bad_dtype), "actor rank 1 described its rollout wrongly: field 3 has dtype code 99");
  torch::Tensor huge = description.clone();
  huge[0][1] = 2;
  huge[0][2] = int64_t{1} << 20;
  huge[0][3] = int64_t{1} << 20;
  EXPECT_EQ(learner_error(huge), "actor rank 1 described its rollout wrongly: field 0 would take over 1 GiB");
  torch::Tensor negative = description.clone();
  negative[5][2] = -3;
  EXPECT_EQ(learner_error(negative), "actor rank 1 described its rollout wrongly: field 5 has size -3");
}

TEST(ActorProcesses, RefusesWhatCannotWork) {
  const core::Config config = fast_ppo_config();
  const auto refusal = [&](int world_size, int num_envs, const std::vector<std::string>& overrides) -> std::string {
    comm::ThreadGroup group(world_size, std::chrono::milliseconds(200));
    auto communicator = group.communicator(0);
    const core::Config changed = fast_ppo_config(overrides);
    auto learner = algos::as_on_policy(
        algos::make_learner("ppo", changed, envs::Space::box({4}, -1.0f, 1.0f), envs::Space::discrete(2)));
    try {
      make_policy("actor_processes",
                  PolicyContext{changed, cartpole(num_envs, 1), *learner, torch::kCPU, communicator.get()});
    } catch (const std::invalid_argument& error) {
      return error.what();
    }
    return "";
  };
  EXPECT_NE(refusal(1, 16, {}).find("needs a learner and at least one actor process"), std::string::npos);
  EXPECT_NE(refusal(3, 15, {}).find("must be divisible by its 2 actor processes"), std::string::npos);
  EXPECT_NE(refusal(2, 16, {"policy.actor_processes.on_actor_failure=\"shrug\""}).find("\"continue\" or \"abort\""),
            std::string::npos);
  EXPECT_NE(refusal(2, 16, {"policy.actor_processes.broadcast_every=0"}).find("broadcast_every must be >= 1"),
            std::string::npos);
  EXPECT_EQ(refusal(2, 16, {}), "");
  comm::test::UnusedCommunicator nccl(2, "nccl");
  auto learner = algos::as_on_policy(
      algos::make_learner("ppo", config, envs::Space::box({4}, -1.0f, 1.0f), envs::Space::discrete(2)));
  try {
    make_policy("actor_processes", PolicyContext{config, cartpole(16, 1), *learner, torch::kCPU, &nccl});
    FAIL() << "accepted NCCL";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("set comm.backend = \"gloo\""), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace concord::policies
