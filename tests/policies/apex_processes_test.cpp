// The `apex` policy across ranks (apex_processes.h), the ranks as threads (comm::ThreadGroup):
// rank 0 learns, the others act. Every actor's steps reach the learner in order on its own stream,
// published parameters reach the actors, an actor's failure is named, the refusals are one line
// each, and DQN learns CartPole-v1. R2D2's actors run as real processes over Gloo on loopback
// (copies of this executable: main() at the end); tests/cli/multi_process_test.cpp runs `concord
// train` itself as processes.
#include "concord/policies/apex_processes.h"

#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "comm/rank_processes.h"
#include "concord/algos/algorithm_registry.h"
#include "concord/algos/dqn.h"
#include "concord/algos/sequence_replay.h"
#include "concord/comm/launch_environment.h"
#include "concord/comm/thread_group.h"
#include "concord/core/rng.h"
#include "concord/core/torch_thread.h"
#include "concord/envs/registry.h"
#include "concord/policies/policy_registry.h"
#include "concord/policies/runtime/evaluation.h"
#include "learning_outcome.h"
#include "policies/learning_runs.h"
#include "policies/policy_fakes.h"

namespace concord::policies {
namespace {

using testing::ApexRecordingLearner;
using testing::CountingEnv;
using testing::expect_fake_priority_inputs;

// A fresh counting env id: observation [steps into the episode, instance], truncated every 4
// steps, reward 1.
std::string register_counting_env() { return testing::register_counting_env("ApexRanks"); }

envs::VectorEnvConfig env_config(const std::string& id, int num_envs, uint64_t seed = 7) {
  envs::VectorEnvConfig config;
  config.env_id = id;
  config.num_envs = num_envs;
  config.seed = seed;
  return config;
}

ApexConfig apex_config(int actors) {
  ApexConfig config;
  config.actors = actors;
  config.wait_timeout_seconds = 20.0;
  return config;
}

// Runs `body(rank, communicator)` on one thread per rank (each with its own generator, as a
// process has) and returns each rank's error ("" when none).
template <typename Body>
std::vector<std::string> run_ranks(int world_size, Body body) {
  comm::ThreadGroup group(world_size, std::chrono::seconds(30));
  std::vector<std::unique_ptr<comm::Communicator>> communicators;
  for (int rank = 0; rank < world_size; ++rank) communicators.push_back(group.communicator(rank));
  std::vector<std::string> errors(static_cast<size_t>(world_size));
  std::vector<std::thread> threads;
  for (int rank = 0; rank < world_size; ++rank) {
    threads.push_back(core::torch_thread(core::derive_seed(11, static_cast<uint64_t>(rank)), [&, rank] {
      // A rank's communicator ends with its thread, as a process's connections end with it.
      std::unique_ptr<comm::Communicator> communicator = std::move(communicators[static_cast<size_t>(rank)]);
      try {
        body(rank, *communicator);
      } catch (const std::exception& error) {
        errors[static_cast<size_t>(rank)] = error.what();
      }
    }));
  }
  for (std::thread& thread : threads) thread.join();
  return errors;
}

float value(const algos::TensorMap& step, const char* field, int64_t row, int64_t column) {
  return step.at(field)[row][column].item<float>();
}

TEST(ApexProcesses, EveryActorsStepsReachTheLearnerInOrderAndParametersReachTheActors) {
  constexpr int kActors = 2;
  constexpr int kEnvsPerActor = 2;
  constexpr int64_t kTotal = 2'000;
  const std::string id = register_counting_env();
  ApexConfig config = apex_config(kActors);
  config.publish_every = 3;
  config.refresh_every = 20;            // segments of 10 steps of an actor's 2 envs
  config.max_env_steps_per_update = 4;  // answers wait for the learner
  std::vector<std::unique_ptr<ApexRecordingLearner>> learners;
  for (int rank = 0; rank <= kActors; ++rank) learners.push_back(std::make_unique<ApexRecordingLearner>(100));
  const torch::Tensor initial = learners[0]->flat_parameters().values().detach().clone();
  TrainingState state;
  std::vector<std::unique_ptr<ApexProcessesPolicy>> policies(kActors + 1);
  const std::vector<std::string> errors = run_ranks(kActors + 1, [&](int rank, comm::Communicator& communicator) {
    policies[static_cast<size_t>(rank)] =
        std::make_unique<ApexProcessesPolicy>(config, env_config(id, kActors * kEnvsPerActor),
                                              *learners[static_cast<size_t>(rank)], torch::kCPU, communicator);
    TrainingState own;
    policies[static_cast<size_t>(rank)]->train(rank == 0 ? state : own, kTotal, 1'000'000, {});
  });
  for (const std::string& error : errors) EXPECT_EQ(error, "");

  // The learner observed whole segments of 20 env steps until it reached kTotal.
  const ApexRecordingLearner& learner = *learners[0];
  EXPECT_EQ(state.global_step, kTotal);
  EXPECT_EQ(learner.observed_rows.load(), kTotal);
  std::map<int, int64_t> steps_of_stream;
  std::map<int, float> instance_of_stream;  // of the stream's first env
  namespace f = algos::transition;
  for (const auto& [stream, step] : learner.steps) {
    ASSERT_EQ(step.at(f::kObservations).size(0), kEnvsPerActor);
    const int64_t k = steps_of_stream[stream]++;  // this actor's k-th step: none lost, none reordered
    if (k == 0) instance_of_stream[stream] = value(step, f::kObservations, 0, 1);
    for (int64_t b = 0; b < kEnvsPerActor; ++b) {
      EXPECT_EQ(value(step, f::kObservations, b, 1), instance_of_stream[stream] + static_cast<float>(b))
          << "stream " << stream << " holds its actor's envs";
      EXPECT_EQ(value(step, f::kObservations, b, 0), static_cast<float>(k % 4)) << "stream " << stream << " step " << k;
      EXPECT_EQ(value(step, f::kNextObservations, b, 0), static_cast<float>(k % 4 + 1));
      EXPECT_EQ(step.at(f::kTruncated)[b].item<float>(), k % 4 == 3 ? 1.0f : 0.0f);
    }
  }
  ASSERT_EQ(steps_of_stream.size(), static_cast<size_t>(kActors));
  for (const auto& [stream, steps] : steps_of_stream) EXPECT_EQ(steps % 10, 0) << "whole segments, stream " << stream;
  ASSERT_GT(learner.updates, 0);
  EXPECT_EQ(state.updates, learner.updates);
  EXPECT_GT(learner.update_steps.front(), 100) << "no update before learning_starts";
  // The answers waited for the learner: at most 4 steps per update once learning started, plus
  // a segment in flight from each actor and the one that crossed learning_starts.
  EXPECT_LE(kTotal - 100, 4 * learner.updates + 3 * 20 + kActors * 20);

  for (int rank = 1; rank <= kActors; ++rank) {
    const ApexRecordingLearner::Replica& replica = *learners[static_cast<size_t>(rank)]->replicas.back();
    // The actor's contexts: its place among the actors, the run's total, a global_step that grows.
    ASSERT_FALSE(replica.contexts.empty());
    int64_t previous = -1;
    for (const algos::ActingContext& context : replica.contexts) {
      EXPECT_EQ(context.actor_index, rank - 1);
      EXPECT_EQ(context.num_actors, kActors);
      EXPECT_DOUBLE_EQ(context.epsilon, std::pow(0.4, 1.0 + 7.0 * (rank - 1) / (kActors - 1)));  // Ape-X's
      EXPECT_EQ(context.total_steps, kTotal);
      EXPECT_GE(context.global_step, previous);
      previous = context.global_step;
    }
    // It acted first with the learner's parameters as they were, then with newer publications
    // only, each after a multiple of publish_every updates.
    ASSERT_FALSE(replica.assigned.empty());
    EXPECT_TRUE(replica.assigned.front().equal(initial)) << "rank " << rank;
    int64_t last = -1;
    for (const torch::Tensor& assigned : replica.assigned) {
      const torch::Tensor difference = assigned - initial;
      const auto version = static_cast<int64_t>(std::lround(difference[0].item<double>()));
      EXPECT_TRUE(torch::allclose(difference, torch::full_like(difference, static_cast<double>(version))));
      EXPECT_EQ(version % 3, 0);
      EXPECT_GT(version, last) << "only a newer publication is sent";
      EXPECT_LE(version, learner.updates);
      last = version;
    }
    EXPECT_GT(last, 0) << "rank " << rank << " received a publication after an update";
  }
}

// Replicas that compute initial priorities send them with each segment, and every observed step
// carries its own (the fake's: the step's counter + 0.5).
TEST(ApexProcesses, TheActorsInitialPrioritiesTravelWithTheirSteps) {
  const std::string id = register_counting_env();
  ApexConfig config = apex_config(2);
  config.refresh_every = 12;  // segments of 6 steps of an actor's 2 envs
  std::vector<std::unique_ptr<ApexRecordingLearner>> learners;
  for (int rank = 0; rank < 3; ++rank) {
    learners.push_back(std::make_unique<ApexRecordingLearner>(10));
    learners.back()->replica_priorities = true;
  }
  TrainingState state;
  const std::vector<std::string> errors = run_ranks(3, [&](int rank, comm::Communicator& communicator) {
    ApexProcessesPolicy policy(config, env_config(id, 4), *learners[static_cast<size_t>(rank)], torch::kCPU,
                               communicator);
    TrainingState own;
    policy.train(rank == 0 ? state : own, 480, 1'000'000, {});
  });
  for (const std::string& error : errors) EXPECT_EQ(error, "");
  EXPECT_EQ(state.global_step, 480);
  ASSERT_FALSE(learners[0]->steps.empty());
  for (const auto& [stream, step] : learners[0]->steps) {
    expect_fake_priority_inputs(step, stream);
  }
}

TEST(ApexProcesses, UnderAbortAnActorsFailureFailsTheRunNamingItsRank) {
  const std::string id = register_counting_env();
  ApexConfig config = apex_config(2);
  config.refresh_every = 4;
  config.on_actor_failure = "abort";
  std::vector<std::unique_ptr<ApexRecordingLearner>> learners;
  for (int rank = 0; rank < 3; ++rank) learners.push_back(std::make_unique<ApexRecordingLearner>(10));
  const std::vector<std::string> errors = run_ranks(3, [&](int rank, comm::Communicator& communicator) {
    ApexProcessesPolicy policy(config, env_config(id, 4), *learners[static_cast<size_t>(rank)], torch::kCPU,
                               communicator);
    if (rank == 2) learners[2]->replicas.back()->throw_at_call = 30;
    TrainingState state;
    policy.train(state, 1'000'000, 1'000'000, {});
  });
  EXPECT_EQ(errors[2], "the simulator crashed");
  EXPECT_THAT(errors[0], ::testing::StartsWith("policy 'apex': actor rank 2 failed: "));
}

// By default (on_actor_failure = "continue") an actor that fails is dropped and the other one
// takes the run to its end; the policy tells a launcher that other ranks may fail.
TEST(ApexProcesses, AFailedActorIsDroppedAndTheOtherTrainsOnToTheEnd) {
  const std::string id = register_counting_env();
  ApexConfig config = apex_config(2);
  config.refresh_every = 4;  // segments of 2 steps of an actor's 2 envs
  constexpr int64_t kTotal = 3'000;
  std::vector<std::unique_ptr<ApexRecordingLearner>> learners;
  for (int rank = 0; rank < 3; ++rank) learners.push_back(std::make_unique<ApexRecordingLearner>(10));
  TrainingState state;
  bool survives = false;
  const std::vector<std::string> errors = run_ranks(3, [&](int rank, comm::Communicator& communicator) {
    ApexProcessesPolicy policy(config, env_config(id, 4), *learners[static_cast<size_t>(rank)], torch::kCPU,
                               communicator);
    if (rank == 0) survives = policy.survives_failed_ranks();
    if (rank == 2) learners[2]->replicas.back()->throw_at_call = 30;
    TrainingState own;
    policy.train(rank == 0 ? state : own, kTotal, 1'000'000, {});
  });
  EXPECT_TRUE(survives);
  EXPECT_EQ(errors[0], "");
  EXPECT_EQ(errors[1], "");
  EXPECT_EQ(errors[2], "the simulator crashed");
  EXPECT_EQ(state.global_step, kTotal);
  // Rank 2 (stream 1) sent what it collected before its 30th act(); rank 1 (stream 0) the rest.
  std::map<int, int64_t> rows_of_stream;
  for (const auto& [stream, step] : learners[0]->steps) {
    rows_of_stream[stream] += step.at(algos::transition::kObservations).size(0);
  }
  EXPECT_LT(rows_of_stream[1], 30 * 2);
  EXPECT_EQ(rows_of_stream[0] + rows_of_stream[1], kTotal);
  EXPECT_GT(learners[0]->updates, 0);

  config.on_actor_failure = "abort";
  comm::ThreadGroup group(3, std::chrono::seconds(5));
  std::unique_ptr<comm::Communicator> communicator = group.communicator(0);
  ApexRecordingLearner learner(10);
  EXPECT_FALSE(
      ApexProcessesPolicy(config, env_config(id, 4), learner, torch::kCPU, *communicator).survives_failed_ranks());
}

TEST(ApexProcesses, RefusesWhatCannotWorkInOneLine) {
  const std::string id = register_counting_env();
  bool concurrent = true;
  const auto refusal = [&](const std::vector<std::string>& overrides, int num_envs, int world_size) {
    core::ConfigSchema schema;
    declare_policy_keys(schema);
    core::Config config(schema);
    for (const std::string& assignment : overrides) config.apply_override(assignment);
    ApexRecordingLearner learner(0);
    learner.concurrent = concurrent;
    comm::ThreadGroup group(world_size, std::chrono::seconds(5));
    std::unique_ptr<comm::Communicator> communicator = group.communicator(0);
    try {
      make_policy("apex", PolicyContext{config, env_config(id, num_envs), learner, torch::kCPU, communicator.get()});
    } catch (const std::invalid_argument& error) {
      return std::string(error.what());
    }
    return std::string();
  };
  EXPECT_EQ(refusal({}, 4, 4),
            "policy 'apex' under a launcher runs one actor on each rank after the learner (rank 0): 4 ranks make 3 "
            "actors, but policy.apex.actors = 2; set it to 3 or launch 3 ranks");
  EXPECT_EQ(refusal({"policy.apex.actors=3"}, 4, 4),
            "policy 'apex': env.num_envs = 4 must be divisible by its 3 actors (policy.apex.actors)");
  EXPECT_EQ(refusal({"policy.apex.actors=3"}, 6, 4), "");
  EXPECT_EQ(refusal({}, 4, 1), "") << "a world of one runs the actors as threads";
  EXPECT_THAT(refusal({"policy.apex.on_actor_failure=maybe"}, 4, 3),
              ::testing::HasSubstr("on_actor_failure must be \"continue\" or \"abort\", got \"maybe\""));
  // Rank 0 stores segments while it updates.
  concurrent = false;
  EXPECT_EQ(refusal({}, 4, 3),
            "policy 'apex' stores transitions while the learner updates, which this algorithm does not support; use "
            "train.policy single or sync_vector");
}

// DQN with the Ape-X epsilons of two actors, on two actor ranks with one CartPole env each,
// learns: the threads' kApexDqn settings (apex_test.cpp), segments of 50 steps (Ape-X's local
// buffer).
double train_and_evaluate(uint64_t seed) {
  const std::vector<std::string> settings = {"algo.hidden_sizes=[64, 64]",    "algo.activation=relu",
                                             "algo.dqn.learning_starts=1000", "algo.dqn.batch_size=64",
                                             "algo.dqn.learning_rate=1e-3",   "algo.dqn.target_network_frequency=250",
                                             "policy.apex.actors=2",          "policy.apex.max_env_steps_per_update=2",
                                             "policy.apex.refresh_every=50",  "policy.apex.publish_every=10"};
  core::ConfigSchema schema;
  algos::declare_algorithm_keys(schema);
  declare_policy_keys(schema);
  core::Config config(schema);
  for (const std::string& assignment : settings) config.apply_override(assignment);
  const envs::EnvSpec spec = envs::make_env("CartPole-v1", {})->spec();
  std::mutex construction;  // the global generator initialises weights: one rank at a time
  double eval_mean = 0.0;
  const std::vector<std::string> errors = run_ranks(3, [&](int rank, comm::Communicator& communicator) {
    std::unique_ptr<algos::Learner> learner;
    {
      std::lock_guard<std::mutex> lock(construction);
      torch::manual_seed(seed + static_cast<uint64_t>(rank));
      learner = algos::make_learner("dqn", config, spec.observation_space, spec.action_space);
    }
    std::unique_ptr<Policy> policy =
        make_policy("apex", PolicyContext{config, env_config("CartPole-v1", 2, seed + static_cast<uint64_t>(rank)),
                                          *learner, torch::kCPU, &communicator});
    TrainingState state;
    policy->train(state, 30'000, int64_t{1} << 40, {});
    if (rank == 0) {
      EXPECT_EQ(state.global_step, 30'000);
      EXPECT_GT(state.updates, 0);
      const std::vector<double> returns =
          runtime::evaluate_episodes(*learner, env_config("CartPole-v1", 2, 99 + seed), 10);
      eval_mean = std::accumulate(returns.begin(), returns.end(), 0.0) / static_cast<double>(returns.size());
    }
  });
  for (const std::string& error : errors) EXPECT_EQ(error, "");
  return eval_mean;
}

TEST(ApexProcessesLearning, DqnWithTwoActorRanksLearnsCartPole) {
  EXPECT_TRUE(test::learns(train_and_evaluate, test::LearningBar{80.0}));
}

// --- R2D2 with its actors in real processes ---
//
// Three copies of this executable (comm/rank_processes.h; main() below sends them to r2d2_rank())
// join over Gloo on loopback: rank 0 learns the shipped R2D2 (configs/r2d2_cartpole_novel.toml:
// a GRU, sequence replay, burn-in) at a small size, ranks 1 and 2 act on CartPoleNoVel-v1 with two
// envs each. Each rank writes what it saw to rank<r>.pt in CONCORD_TEST_DIR for the test to
// compare: the actors the observations and states they acted from, the learner what reached its
// observe() and the sequences a SequenceReplay with its spec stores from those steps.

constexpr int64_t kR2d2Steps = 3'200;  // whole segments of 16 env steps
constexpr int kR2d2Envs = 4;

core::Config r2d2_config() {
  core::Config config = testing::config_with(
      {"policy.apex.actors=2", "policy.apex.refresh_every=16", "policy.apex.min_env_steps_per_update=16",
       "policy.apex.max_env_steps_per_update=16", "policy.apex.wait_timeout_seconds=30"});
  const testing::Shipped file = testing::shipped("r2d2_cartpole_novel.toml");
  config.merge_toml(file.algo_tables, "the [algo] tables of configs/" + file.file);
  for (const std::string& assignment : {"algo.recurrent_size=16", "algo.dqn.learning_starts=400",
                                        "algo.dqn.batch_size=4", "algo.dqn.sequence_length=8", "algo.dqn.burn_in=4"})
    config.apply_override(assignment);
  return config;
}

// A Dqn, forwarded to, whose replicas record each act()'s observations and the state they acted
// from (zeros at the first call, as the collector sends it), and whose observe() records each
// stream's steps and feeds them to a SequenceReplay of the Dqn's spec (uniform, large enough to
// keep every sequence).
class RecordingDqn final : public algos::OffPolicyLearner {
 public:
  struct Acted {
    std::vector<torch::Tensor> observations;  // [B, obs] per act()
    std::vector<torch::Tensor> states;        // [B, cells] per act(): state "h" before it
  };
  class Replica final : public algos::ActorReplica {
   public:
    Replica(std::unique_ptr<algos::ActorReplica> inner, Acted& acted) : inner_(std::move(inner)), acted_(acted) {}
    algos::ActorOutput act(const algos::ActorInput& input, const algos::ActingContext& context) override {
      const torch::Tensor before = input.state.empty() ? torch::Tensor() : input.state.at("h").clone();
      algos::ActorOutput out = inner_->act(input, context);
      acted_.observations.push_back(input.observations.clone());
      acted_.states.push_back(before.defined() ? before : torch::zeros_like(out.state.at("h")));
      return out;
    }
    algos::Metrics exploration(const algos::ActingContext& context) const override {
      return inner_->exploration(context);
    }
    void assign(const torch::Tensor& flat_values) override { inner_->assign(flat_values); }
    std::vector<std::string> priority_input_fields() const override { return inner_->priority_input_fields(); }
    algos::TensorMap priority_inputs(const algos::TensorMap& transitions) override {
      return inner_->priority_inputs(transitions);
    }
    std::vector<std::string> state_fields() const override { return inner_->state_fields(); }

   private:
    std::unique_ptr<algos::ActorReplica> inner_;
    Acted& acted_;
  };

  explicit RecordingDqn(std::unique_ptr<algos::Learner> learner)
      : owned_(std::move(learner)), dqn_(dynamic_cast<algos::Dqn&>(*owned_)) {
    algos::SequenceReplaySpec spec;
    spec.observation_shape = dqn_.config().network.obs_shape;
    spec.num_actions = dqn_.config().network.action_dim;
    spec.state_shapes = {{"h", {dqn_.online_network()->initial_state(1).at("h").size(1)}}};
    spec.burn_in = dqn_.config().burn_in;
    spec.trace = dqn_.config().sequence_length;
    spec.n_step = dqn_.config().n_step;
    spec.capacity = kR2d2Steps;
    sequences = std::make_unique<algos::SequenceReplay>(spec);
  }

  void observe(const algos::TensorMap& step, int stream) override {
    received[stream].push_back(algos::clone(step));
    sequences->add(step, stream);
    dqn_.observe(step, stream);
  }
  algos::Metrics update(int64_t global_step, double progress) override { return dqn_.update(global_step, progress); }
  int64_t learning_starts() const override { return dqn_.learning_starts(); }
  int64_t train_frequency() const override { return dqn_.train_frequency(); }
  std::unique_ptr<algos::ActorReplica> make_actor_replica() override {
    return std::make_unique<Replica>(dqn_.make_actor_replica(), acted);
  }
  bool observes_while_updating() const override { return dqn_.observes_while_updating(); }
  bool acts_with_memory() const override { return dqn_.acts_with_memory(); }
  algos::Actor& actor() override { return dqn_.actor(); }
  torch::nn::Module& network() override { return dqn_.network(); }
  nn::FlatParameters& flat_parameters() override { return dqn_.flat_parameters(); }
  void save(core::Checkpoint& checkpoint) const override { dqn_.save(checkpoint); }
  void load(const core::Checkpoint& checkpoint) override { dqn_.load(checkpoint); }

  int64_t updates() const { return dqn_.updates(); }

  Acted acted;                                            // an actor rank's
  std::map<int, std::vector<algos::TensorMap>> received;  // rank 0's: stream -> its steps
  std::unique_ptr<algos::SequenceReplay> sequences;       // rank 0's

 private:
  std::unique_ptr<algos::Learner> owned_;
  algos::Dqn& dqn_;
};

// One rank of the R2D2 run (CONCORD_TEST_WORKER=r2d2); 0 when it trained and wrote its record.
int r2d2_rank() {
  try {
    at::set_num_threads(1);
    const comm::LaunchEnvironment environment = comm::LaunchEnvironment::from_environment();
    const std::unique_ptr<comm::Communicator> communicator = comm::connect(environment, comm::ConnectOptions{});
    const int rank = communicator->rank();
    const core::Config config = r2d2_config();
    const envs::VectorEnvConfig env = env_config("CartPoleNoVel-v1", kR2d2Envs, 3);
    torch::manual_seed(3 + static_cast<uint64_t>(rank));
    RecordingDqn learner(testing::learner_for("dqn", config, env));
    const torch::Tensor initial = learner.flat_parameters().values().detach().clone();
    TrainingState state;
    make_policy("apex", PolicyContext{config, env, learner, torch::kCPU, communicator.get()})
        ->train(state, kR2d2Steps, int64_t{1} << 40, {});

    torch::serialize::OutputArchive archive;
    namespace f = algos::transition;
    if (rank == 0) {
      const torch::Tensor parameters = learner.flat_parameters().values().detach();
      archive.write("global_step", torch::tensor(state.global_step));
      archive.write("updates", torch::tensor(learner.updates()));
      archive.write("finite", torch::isfinite(parameters).all());
      archive.write("changed", torch::tensor(!torch::equal(parameters, initial)));
      for (const auto& [stream, steps] : learner.received) {
        std::vector<torch::Tensor> observations, states, ends;
        for (const algos::TensorMap& step : steps) {
          observations.push_back(step.at(f::kObservations));
          states.push_back(step.at(std::string(algos::kTransitionStatePrefix) + "h"));
          ends.push_back((step.at(f::kTerminated) + step.at(f::kTruncated)) > 0);
        }
        const std::string prefix = "stream" + std::to_string(stream) + "/";
        archive.write(prefix + "observations", torch::stack(observations));
        archive.write(prefix + "states", torch::stack(states));
        archive.write(prefix + "ends", torch::stack(ends));
      }
      // Every sequence stored (the capacity exceeds them: none was overwritten).
      const algos::TensorMap stored = learner.sequences->buffer()->state();
      archive.write("sequences/states", stored.at("fields/" + std::string(algos::sequence_field::kStatePrefix) + "h"));
      archive.write("sequences/starts", stored.at("fields/" + std::string(algos::sequence_field::kStarts)));
    } else {
      archive.write("observations", torch::stack(learner.acted.observations));
      archive.write("states", torch::stack(learner.acted.states));
    }
    const char* dir = std::getenv("CONCORD_TEST_DIR");
    if (dir == nullptr) throw std::runtime_error("CONCORD_TEST_DIR is not set");
    archive.save_to(std::string(dir) + "/rank" + std::to_string(rank) + ".pt");
    return 0;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "r2d2 rank failed: %s\n", error.what());
    return 1;
  }
}

torch::Tensor read(torch::serialize::InputArchive& archive, const std::string& name) {
  torch::Tensor tensor;
  archive.read(name, tensor);
  return tensor;
}

// R2D2 across processes: every step an actor process sends carries the state it acted from, so
// the learner's sequences start from the actors' states: its observe() receives, on each actor's
// stream and in order, exactly the observations and GRU states that actor acted from (a prefix:
// an actor's last segment may arrive after the run's end), non-zero wherever the step does not
// start an episode; the sequences a SequenceReplay stores from those steps start from zeros where
// they begin at or before an episode's start, and from one of the actors' states elsewhere. The
// learner updates, and its parameters change and stay finite.
TEST(ApexProcesses, R2d2ActorProcessesSendTheStatesTheyActedFromToTheSequenceReplay) {
  std::random_device entropy;
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("apex_r2d2_" + std::to_string(::getpid()) + "_" + std::to_string(entropy()));
  std::filesystem::create_directories(dir);
  std::map<int, std::map<std::string, std::string>> per_rank;
  for (int rank = 0; rank < 3; ++rank) per_rank[rank] = {{"CONCORD_TEST_DIR", dir.string()}};
  const std::vector<test::RankResult> ranks = test::run_ranks("r2d2", 3, dir, per_rank, std::chrono::seconds(120));
  for (const test::RankResult& rank : ranks) ASSERT_EQ(rank.exit_code, 0) << rank.output;

  torch::serialize::InputArchive learner;
  learner.load_from((dir / "rank0.pt").string());
  EXPECT_EQ(read(learner, "global_step").item<int64_t>(), kR2d2Steps);
  EXPECT_GT(read(learner, "updates").item<int64_t>(), 100);
  EXPECT_TRUE(read(learner, "finite").item<bool>());
  EXPECT_TRUE(read(learner, "changed").item<bool>());

  std::vector<torch::Tensor> acted_states;  // every actor's, [N * B, cells]
  int64_t mid_episode_steps = 0;
  for (int actor = 0; actor < 2; ++actor) {
    SCOPED_TRACE("actor rank " + std::to_string(actor + 1));
    torch::serialize::InputArchive acted;
    acted.load_from((dir / ("rank" + std::to_string(actor + 1) + ".pt")).string());
    const torch::Tensor acted_observations = read(acted, "observations");
    const torch::Tensor acted_state = read(acted, "states");
    const std::string prefix = "stream" + std::to_string(actor) + "/";
    const torch::Tensor observations = read(learner, prefix + "observations");
    const torch::Tensor states = read(learner, prefix + "states");
    const torch::Tensor ends = read(learner, prefix + "ends");
    const int64_t steps = observations.size(0);
    ASSERT_EQ(observations.size(1), kR2d2Envs / 2);
    ASSERT_GT(steps, 0);
    ASSERT_LE(steps, acted_observations.size(0));
    EXPECT_TRUE(torch::equal(observations, acted_observations.slice(0, 0, steps)));
    EXPECT_TRUE(torch::equal(states, acted_state.slice(0, 0, steps)));
    acted_states.push_back(acted_state.flatten(0, 1));
    // The initial state (zeros) at the stream's first step; inside an episode (the step before
    // did not end it) the state the step before left, never zeros.
    EXPECT_EQ(states[0].abs().sum().item<float>(), 0.0f);
    const torch::Tensor inside_episode = ~ends.slice(0, 0, steps - 1);
    const torch::Tensor zero_rows = states.slice(0, 1).abs().sum(2) == 0;
    EXPECT_EQ((zero_rows & inside_episode).sum().item<int64_t>(), 0);
    mid_episode_steps += inside_episode.sum().item<int64_t>();
  }
  EXPECT_GT(mid_episode_steps, 1'000);

  // Sequences: zeros before an episode's first observation, an actor's state elsewhere.
  const torch::Tensor sequence_states = read(learner, "sequences/states");
  const torch::Tensor from_episode_start = read(learner, "sequences/starts").sum(1) > 0;
  ASSERT_GT(sequence_states.size(0), 100);
  const torch::Tensor zero = sequence_states.abs().sum(1) == 0;
  EXPECT_TRUE(torch::equal(zero, from_episode_start));
  const torch::Tensor inside = sequence_states.index({~from_episode_start});
  EXPECT_GT(inside.size(0), 50);
  const torch::Tensor all_acted = torch::cat(acted_states);
  const torch::Tensor matches = (inside.unsqueeze(1) == all_acted.unsqueeze(0)).all(2).any(1);
  EXPECT_TRUE(matches.all().item<bool>()) << matches.logical_not().sum().item<int64_t>() << " of " << inside.size(0)
                                          << " sequences start from a state no actor acted from";
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace concord::policies

int main(int argc, char** argv) {
  if (const char* scenario = std::getenv("CONCORD_TEST_WORKER")) {
    if (std::string(scenario) == "r2d2") return concord::policies::r2d2_rank();
    std::fprintf(stderr, "unknown worker scenario '%s'\n", scenario);
    return 2;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
