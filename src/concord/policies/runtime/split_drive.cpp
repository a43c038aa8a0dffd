#include "concord/policies/runtime/split_drive.h"

#include <stdexcept>
#include <utility>

#include <c10/core/GradMode.h>

#include "concord/algos/actor_critic_actor.h"
#include "concord/policies/runtime/actor_copy.h"
#include "concord/policies/runtime/collected_rollout.h"
#include "concord/policies/runtime/exploration_bonus.h"
#include "concord/policies/runtime/learner_drive.h"
#include "concord/policies/runtime/on_policy_update.h"
#include "concord/policies/runtime/rollout_collector.h"
#include "concord/policies/runtime/transition_collector.h"

namespace concord::policies::runtime {
namespace {

// ---- on-policy: rollouts, acted by a private ActorCopy ----

struct CopySnapshot final : ParameterSnapshot {
  explicit CopySnapshot(algos::OnPolicyLearner& learner) : copy(learner) {}
  ActorCopy copy;
};

class OnPolicyActing final : public ActingHalf {
 public:
  // The copy first: cloning the network draws from this thread's generator.
  OnPolicyActing(algos::OnPolicyLearner& learner, envs::BatchedEnvs& env, torch::Device device)
      : acting_(learner), collector_(env, learner.rollout_length(), device) {}

  void load(ParameterSnapshot& snapshot) override { static_cast<CopySnapshot&>(snapshot).copy.copy_to(acting_); }
  void collect(int64_t /*global_step*/, int64_t /*total_steps*/, Gathered& into) override {
    acting_.read([&](nn::ActorCritic& model, int64_t) {
      algos::ActorCriticActor in_line(model);
      CollectedRollout collected = CollectedRollout::collect(collector_, in_line);
      into.experience = std::move(collected.rollout);
      into.episodes = std::move(collected.episodes);
    });
  }

 private:
  ActorCopy acting_;  // the acting thread's own network, refreshed between rollouts
  RolloutCollector collector_;
};

class OnPolicySplit final : public SplitDrive {
 public:
  OnPolicySplit(algos::OnPolicyLearner& learner, envs::BatchedEnvs& env, torch::Device device, explore::Bonus* bonus)
      : learner_(learner), env_(env), device_(device), bonus_(bonus) {}

  int64_t steps_per_collect() const override { return learner_.rollout_length() * env_.num_envs(); }
  int64_t updates_due(int64_t /*before*/, int64_t /*after*/) const override { return 1; }
  std::string experience_name() const override { return "rollouts"; }
  std::string unit_name() const override { return "a rollout"; }
  double version_spin_seconds() const override { return 0.0; }

  std::unique_ptr<ParameterSnapshot> make_snapshot() override { return std::make_unique<CopySnapshot>(learner_); }
  std::unique_ptr<ActingHalf> start_acting() override {
    return std::make_unique<OnPolicyActing>(learner_, env_, device_);
  }

  void publish(ParameterSnapshot& snapshot, int64_t version) override {
    static_cast<CopySnapshot&>(snapshot).copy.publish(learner_, version);
  }
  void take(const Gathered& gathered) override { taken_ = &std::get<algos::Rollout>(gathered.experience); }
  algos::Metrics update(TrainingState& state, int64_t due, int64_t total_steps,
                        const std::function<void()>& after_each) override {
    if (due != 1 || taken_ == nullptr) throw std::logic_error("SplitDrive: one update per rollout taken");
    algos::Metrics metrics = run_on_policy_update(learner_, *taken_, bonus_, state, total_steps);
    taken_ = nullptr;
    if (after_each) after_each();
    return metrics;
  }

 private:
  algos::OnPolicyLearner& learner_;
  envs::BatchedEnvs& env_;
  torch::Device device_;
  explore::Bonus* bonus_;
  const algos::Rollout* taken_ = nullptr;
};

// ---- off-policy: transitions, acted by the learner's ActorReplica from flat copies ----

struct FlatSnapshot final : ParameterSnapshot {
  explicit FlatSnapshot(at::Tensor values) : values(std::move(values)) {}
  at::Tensor values;  // laid out as the learner's flat_parameters().values()
};

class OffPolicyActing final : public ActingHalf {
 public:
  OffPolicyActing(algos::ActorReplica& replica, envs::BatchedEnvs& env, torch::Device device)
      : replica_(replica), collector_(env, device) {}

  void load(ParameterSnapshot& snapshot) override { replica_.assign(static_cast<FlatSnapshot&>(snapshot).values); }
  void collect(int64_t global_step, int64_t total_steps, Gathered& into) override {
    into.experience = collector_.step(replica_, {false, global_step, total_steps, 0, 1},
                                      [&into](double episode_return, int64_t episode_length) {
                                        into.episodes.emplace_back(episode_return, episode_length);
                                      });
  }

 private:
  algos::ActorReplica& replica_;
  TransitionCollector collector_;
};

class OffPolicySplit final : public SplitDrive {
 public:
  OffPolicySplit(algos::OffPolicyLearner& learner, envs::BatchedEnvs& env, torch::Device device,
                 const std::string& policy)
      : learner_(learner),
        env_(env),
        device_(device),
        replica_(learner.make_actor_replica()),
        learning_starts_(learner.learning_starts()),
        train_frequency_(learner.train_frequency()) {
    if (!replica_) {
      throw NeedsOneThreadPolicy("policy '" + policy +
                                 "' acts from a copy of the learner's network, which this algorithm cannot make "
                                 "(OffPolicyLearner::make_actor_replica)");
    }
  }

  int64_t steps_per_collect() const override { return env_.num_envs(); }
  int64_t updates_due(int64_t before, int64_t after) const override {
    return off_policy_updates_due(before, after, learning_starts_, train_frequency_);
  }
  std::string experience_name() const override { return "transitions"; }
  std::string unit_name() const override { return "a segment of steps"; }
  double version_spin_seconds() const override { return 0.002; }

  std::unique_ptr<ParameterSnapshot> make_snapshot() override {
    return std::make_unique<FlatSnapshot>(learner_.flat_parameters().values().detach().clone());
  }
  std::unique_ptr<ActingHalf> start_acting() override {
    return std::make_unique<OffPolicyActing>(*replica_, env_, device_);
  }

  void publish(ParameterSnapshot& snapshot, int64_t /*version*/) override {
    c10::NoGradGuard no_grad;
    static_cast<FlatSnapshot&>(snapshot).values.copy_(learner_.flat_parameters().values().detach());
  }
  void take(const Gathered& gathered) override { learner_.observe(std::get<algos::TensorMap>(gathered.experience)); }
  algos::Metrics update(TrainingState& state, int64_t due, int64_t total_steps,
                        const std::function<void()>& after_each) override {
    return run_off_policy_updates(learner_, state, due, total_steps, after_each);
  }

 private:
  algos::OffPolicyLearner& learner_;
  envs::BatchedEnvs& env_;
  torch::Device device_;
  std::unique_ptr<algos::ActorReplica> replica_;  // the acting half's network
  int64_t learning_starts_;
  int64_t train_frequency_;
};

}  // namespace

std::unique_ptr<SplitDrive> make_split_drive(algos::Learner& learner, envs::BatchedEnvs& env, torch::Device device,
                                             explore::Bonus* bonus, const std::string& policy, int64_t max_policy_lag) {
  refuse_bonus_off_policy(bonus, learner);
  return for_family(
      learner,
      [&](algos::OnPolicyLearner& on_policy) -> std::unique_ptr<SplitDrive> {
        require_lag_correction(policy, max_policy_lag, on_policy, "acts with parameters");
        return std::make_unique<OnPolicySplit>(on_policy, env, device, bonus);
      },
      // An off-policy learner learns from replayed experience of older parameters by design: no
      // lag correction to require.
      [&](algos::OffPolicyLearner& off_policy) -> std::unique_ptr<SplitDrive> {
        return std::make_unique<OffPolicySplit>(off_policy, env, device, policy);
      });
}

}  // namespace concord::policies::runtime
