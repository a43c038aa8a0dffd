#pragma once

// Fakes shared by the policy tests: a tiny environment that counts its steps and a learner that
// records what it is given, so a test can check every Rollout field a policy produced exactly.

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "concord/algos/off_policy_learner.h"
#include "concord/algos/on_policy_learner.h"
#include "concord/envs/env.h"
#include "concord/envs/registry.h"
#include "concord/envs/vector_env.h"
#include "concord/nn/actor_critic.h"
#include "concord/nn/flat_parameters.h"

namespace concord::policies::testing {

// Calls train() `runs` times (each returns the trained parameters as one flat tensor) and expects
// every run to end with the first one's parameters, bit for bit.
inline void expect_identical_runs(const std::function<torch::Tensor()>& train, int runs = 4) {
  const torch::Tensor first = train();
  for (int run = 1; run < runs; ++run) {
    const torch::Tensor again = train();
    EXPECT_TRUE(torch::equal(first, again))
        << "run " << run << ": largest difference " << (first - again).abs().max().item<float>();
  }
}

// A model's parameters, detached, as one flat tensor.
inline torch::Tensor flat_parameters_of(nn::ActorCritic& model) {
  std::vector<torch::Tensor> parameters;
  for (const torch::Tensor& parameter : model->parameters()) parameters.push_back(parameter.detach().flatten());
  return torch::cat(parameters);
}

struct CountingEnvOptions {
  int terminate_after = 0;      // Terminates after this many steps into the episode; 0: never.
  int max_episode_steps = 4;    // Time limit (truncation); 0: none.
  std::optional<int> instance;  // Set: the observation is [steps, instance] instead of [steps].
};

// Observation [steps into the episode] or, with options.instance, [steps into the episode,
// instance]; terminates after options.terminate_after steps (0: never); truncated by the time
// limit (4 steps by default). Reward 1 per step. Discrete(2) actions, ignored.
class CountingEnv final : public envs::FloatEnv {
 public:
  explicit CountingEnv(const CountingEnvOptions& options = {})
      : envs::FloatEnv(envs::EnvSpec{"Counting", envs::Space::box({options.instance ? 2 : 1}, -100.0f, 100.0f),
                                     envs::Space::discrete(2), options.max_episode_steps, std::nullopt}),
        options_(options) {}

 private:
  void reset_state(float* observation) override {
    step_ = 0;
    write(observation);
  }
  envs::StepResult step_state(const envs::Action&, float* observation) override {
    ++step_;
    write(observation);
    return {1.0f, options_.terminate_after > 0 && step_ >= options_.terminate_after, false};
  }
  void write(float* observation) const {
    observation[0] = static_cast<float>(step_);
    if (options_.instance) observation[1] = static_cast<float>(*options_.instance);
  }
  CountingEnvOptions options_;
  int step_ = 0;
};

// A fresh id in envs::Registry::global() for CountingEnvs with instances: observation [steps into
// the episode, instance], truncated every 4 steps, reward 1. Instances number the envs the id made,
// in the order they were made. `prefix` names the test that registers it.
inline std::string register_counting_env(const std::string& prefix) {
  static std::atomic<int> next_id{0};
  const std::string id = prefix + "Counting-" + std::to_string(next_id.fetch_add(1)) + "-v0";
  auto counter = std::make_shared<std::atomic<int>>(0);
  envs::Registry::global().add(id, [counter] {
    CountingEnvOptions options;
    options.instance = counter->fetch_add(1);
    return std::make_unique<CountingEnv>(options);
  });
  return id;
}

// CountingEnv (without an instance) by the id "Counting", in a registry of its own.
inline envs::Registry counting_registry(int terminate_after) {
  envs::Registry registry;
  registry.add("Counting", [terminate_after] {
    CountingEnvOptions options;  // observation [steps into the episode], time limit 4
    options.terminate_after = terminate_after;
    return std::make_unique<CountingEnv>(options);
  });
  return registry;
}

inline envs::VectorEnvConfig counting_config(int num_envs) {
  envs::VectorEnvConfig config;
  config.env_id = "Counting";
  config.num_envs = num_envs;
  return config;
}

// Records every rollout it is given (a deep copy: RolloutCollector refills the same tensors for
// the next rollout) and every progress; can sleep to play a slow learner, and report a nan loss
// at one update. Changes its model only when asked to stamp versions into it. Not thread-safe: policies call update()
// one at a time (central_inference under its lock).
class RecordingLearner final : public algos::OnPolicyLearner {
 public:
  // The default network suits CountingEnv without an instance: 1-dim observations, 2 actions.
  explicit RecordingLearner(int64_t rollout_length, const nn::ActorCriticConfig& network = counting_network())
      : rollout_length_(rollout_length), model_(network) {}

  static nn::ActorCriticConfig counting_network() {
    nn::ActorCriticConfig config;
    config.obs_shape = {1};
    config.action_dim = 2;
    return config;
  }

  algos::Metrics update(const algos::Rollout& rollout, double progress) override {
    ++updates_;
    if (record) rollouts.push_back(rollout.clone());
    progresses.push_back(progress);
    if (update_sleep.count() > 0) std::this_thread::sleep_for(update_sleep);
    if (on_update) on_update();
    if (stamp_version) stamp(updates_);
    return {{"losses/fake", updates_ == nan_at_update ? std::nan("") : 1.0}};
  }
  nn::ActorCritic model() override { return model_; }
  int64_t rollout_length() const override { return rollout_length_; }
  nn::FlatParameters& flat_parameters() override { return parameters_; }
  int64_t gradient_steps_per_update() const override { return 1; }
  std::unique_ptr<algos::OnPolicyLearner> make_shared_replica() override { throw std::logic_error("not shareable"); }
  bool corrects_policy_lag() const override { return corrects_lag; }
  void save(core::Checkpoint&) const override {}
  void load(const core::Checkpoint&) override {}

  bool record = true;  // false: keep no rollouts (long runs), only progresses.
  std::chrono::milliseconds update_sleep{0};
  int nan_at_update = -1;  // The 1-based update whose "losses/fake" is nan; -1: none.
  bool corrects_lag = true;
  std::function<void()> on_update;  // called inside every update, after the sleep
  // Sets every parameter to 0 but the critic head's bias, which becomes the number of updates
  // done, so that V(o) = that number: a rollout's values then name the version that acted. Call
  // stamp(0) before training to start from version 0.
  bool stamp_version = false;
  void stamp(int version) {
    torch::NoGradGuard no_grad;
    parameters_.values().zero_();
    model_->named_parameters()["critic_head.bias"].fill_(static_cast<float>(version));
  }
  std::vector<algos::Rollout> rollouts;
  std::vector<double> progresses;

 private:
  int64_t rollout_length_;
  nn::ActorCritic model_;
  nn::FlatParameters parameters_{*model_};
  int updates_ = 0;
};

// Always takes action 0 and records the ActingContext of every call.
class RecordingActor final : public algos::Actor {
 public:
  algos::ActorOutput act(const algos::ActorInput& input, const algos::ActingContext& context) override {
    contexts.push_back(context);
    return {torch::zeros({input.observations.size(0)}, torch::kInt64), {}, {}};
  }
  std::vector<algos::ActingContext> contexts;
};

// An off-policy learner that records every step it observes (deep copies) and the global step of
// every update; update() reports no metrics while it has observed fewer than `batch_steps`
// steps (a replay without a batch).
class RecordingOffPolicyLearner final : public algos::OffPolicyLearner {
 public:
  RecordingOffPolicyLearner(int64_t learning_starts, int64_t train_frequency, int64_t batch_steps = 0)
      : learning_starts_(learning_starts), train_frequency_(train_frequency), batch_steps_(batch_steps) {}

  void observe(const algos::TensorMap& step, int stream) override {
    steps.push_back(algos::clone(step));
    streams.push_back(stream);
  }
  algos::Metrics update(int64_t global_step, double progress) override {
    if (static_cast<int64_t>(steps.size()) < batch_steps_) return {};
    update_steps.push_back(global_step);
    progresses.push_back(progress);
    return {{"losses/fake", 1.0}};
  }
  int64_t learning_starts() const override { return learning_starts_; }
  int64_t train_frequency() const override { return train_frequency_; }
  algos::Actor& actor() override { return actor_; }
  torch::nn::Module& network() override { return *network_; }
  nn::FlatParameters& flat_parameters() override { return parameters_; }
  void save(core::Checkpoint&) const override {}
  void load(const core::Checkpoint&) override {}

  std::vector<algos::TensorMap> steps;
  std::vector<int> streams;
  std::vector<int64_t> update_steps;
  std::vector<double> progresses;
  RecordingActor actor_;

 private:
  int64_t learning_starts_, train_frequency_, batch_steps_;
  torch::nn::Linear network_{1, 2};
  nn::FlatParameters parameters_{*network_};
};

// A step that went to observe() with the fake Replica's priority inputs (gives_priorities):
// acting Q = its first observation value + 0.5, acting next value that + 0.25.
inline void expect_fake_priority_inputs(const algos::TensorMap& step, int stream) {
  namespace f = algos::transition;
  ASSERT_EQ(step.count(f::kActingQ), 1u);
  ASSERT_EQ(step.count(f::kActingNextValue), 1u);
  const torch::Tensor first = step.at(f::kObservations).select(1, 0);
  EXPECT_TRUE(step.at(f::kActingQ).equal(first + 0.5f)) << "stream " << stream;
  EXPECT_TRUE(step.at(f::kActingNextValue).equal(first + 0.25f)) << "stream " << stream;
}

// An off-policy learner that `apex` can drive: observe() and update() may run on two threads at
// once, and it counts observe() calls that overlapped (the policy must serialise them). Each
// make_actor_replica() gives a Replica that records its contexts and what assign() gave it.
// update() adds 1 to every parameter, so published values minus the initial ones count the
// updates they come from; it returns no metrics until `batch_steps` rows were observed. Also the
// off-policy learner of `async_learner`'s tests, with a train_frequency of choice.
class ApexRecordingLearner final : public algos::OffPolicyLearner {
 public:
  class Replica final : public algos::ActorReplica {
   public:
    algos::ActorOutput act(const algos::ActorInput& input, const algos::ActingContext& context) override {
      const torch::Tensor& observations = input.observations;
      contexts.push_back(context);
      acted_with.push_back(assigned.empty() ? -1.0f : assigned.back().reshape({-1})[0].item<float>());
      if (static_cast<int>(contexts.size()) == throw_at_call) throw std::runtime_error("the simulator crashed");
      return {torch::zeros({observations.size(0)}, torch::kInt64), {}, {}};
    }
    void assign(const torch::Tensor& flat_values) override {
      assigned.push_back(flat_values.clone());
      updates_at_assign.push_back(learner_updates->load());
    }
    // With gives_priorities: each transition's acting Q is its observation's first value + 0.5,
    // its acting next value that + 0.25.
    std::vector<std::string> priority_input_fields() const override {
      if (!gives_priorities) return {};
      return {algos::transition::kActingQ, algos::transition::kActingNextValue};
    }
    algos::TensorMap priority_inputs(const algos::TensorMap& transitions) override {
      if (!gives_priorities) return {};
      const torch::Tensor first = transitions.at(algos::transition::kObservations).select(1, 0).to(torch::kFloat);
      return {{algos::transition::kActingQ, first + 0.5}, {algos::transition::kActingNextValue, first + 0.25}};
    }

    bool gives_priorities = false;

    const std::atomic<int>* learner_updates = nullptr;
    std::vector<algos::ActingContext> contexts;
    std::vector<torch::Tensor> assigned;
    std::vector<int> updates_at_assign;  // the learner's update count when each assign() ran
    std::vector<float> acted_with;       // per act(): the first value last assigned (-1: none yet)
    int throw_at_call = 0;               // the 1-based act() call that throws; 0: none
  };

  explicit ApexRecordingLearner(int64_t learning_starts, int64_t batch_steps = 1, int64_t train_frequency = 1)
      : learning_starts_(learning_starts), batch_steps_(batch_steps), train_frequency_(train_frequency) {}

  void observe(const algos::TensorMap& step, int stream) override {
    if (observing_.fetch_add(1) != 0) overlapping_observes.fetch_add(1);
    steps.emplace_back(stream, algos::clone(step));
    observed_rows.fetch_add(step.at(algos::transition::kObservations).size(0));
    observing_.fetch_sub(1);
  }
  algos::Metrics update(int64_t global_step, double progress) override {
    if (observed_rows.load() < batch_steps_) return {};
    {
      torch::NoGradGuard no_grad;
      parameters_.values().add_(1.0);
    }
    ++updates;
    updates_made.fetch_add(1);
    update_steps.push_back(global_step);
    progresses.push_back(progress);
    if (update_sleep.count() > 0) std::this_thread::sleep_for(update_sleep);
    return {{"losses/fake", updates == nan_at_update ? std::nan("") : 1.0}};
  }
  int64_t learning_starts() const override { return learning_starts_; }
  int64_t train_frequency() const override { return train_frequency_; }
  std::unique_ptr<algos::ActorReplica> make_actor_replica() override {
    if (!replicable) return nullptr;
    auto replica = std::make_unique<Replica>();
    replica->learner_updates = &updates_made;
    replica->gives_priorities = replica_priorities;
    replicas.push_back(replica.get());
    return replica;
  }
  bool observes_while_updating() const override { return concurrent; }
  algos::Actor& actor() override { return actor_; }
  torch::nn::Module& network() override { return *network_; }
  nn::FlatParameters& flat_parameters() override { return parameters_; }
  void save(core::Checkpoint&) const override {}
  void load(const core::Checkpoint&) override {}

  bool replicable = true;           // false: make_actor_replica() returns nullptr
  bool replica_priorities = false;  // the replicas give priority inputs (Replica::priority_inputs)
  bool concurrent = true;           // observes_while_updating()
  int nan_at_update = -1;           // the 1-based update whose "losses/fake" is nan; -1: none
  std::chrono::microseconds update_sleep{0};
  std::vector<Replica*> replicas;                       // owned by the policy
  std::vector<std::pair<int, algos::TensorMap>> steps;  // (stream, step), in observe() order
  std::atomic<int64_t> observed_rows{0};
  std::atomic<int> overlapping_observes{0};
  int updates = 0;
  std::atomic<int> updates_made{0};  // `updates`, readable from the actors' threads
  std::vector<int64_t> update_steps;
  std::vector<double> progresses;
  RecordingActor actor_;

 private:
  int64_t learning_starts_, batch_steps_, train_frequency_;
  std::atomic<int> observing_{0};
  torch::nn::Linear network_{1, 2};
  nn::FlatParameters parameters_{*network_};
};

}  // namespace concord::policies::testing
