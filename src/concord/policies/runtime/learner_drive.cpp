#include "concord/policies/runtime/learner_drive.h"

#include <stdexcept>
#include <string>
#include <utility>

#include "concord/algos/learner_family.h"
#include "concord/nn/actor_critic.h"
#include "concord/policies/runtime/exploration_bonus.h"
#include "concord/policies/runtime/on_policy_update.h"
#include "concord/policies/runtime/rollout_collector.h"
#include "concord/policies/runtime/transition_collector.h"

namespace concord::policies::runtime {
namespace {

class OnPolicyDrive final : public LearnerDrive {
 public:
  OnPolicyDrive(algos::OnPolicyLearner& learner, envs::BatchedEnvs& env, torch::Device device, explore::Bonus* bonus)
      : learner_(learner), collector_(env, learner.rollout_length(), device), model_(learner.model()), bonus_(bonus) {}

  int64_t steps_per_collect() const override { return collector_.env_steps_per_rollout(); }
  void collect(int64_t /*global_step*/, int64_t /*total_steps*/, const EpisodeCallback& on_episode) override {
    collected_ = &collector_.collect(model_, on_episode);
  }
  bool learning(int64_t /*global_step*/) const override { return true; }
  int64_t updates_due(int64_t /*before*/, int64_t /*after*/) const override { return 1; }
  algos::Metrics update(TrainingState& state, int64_t due, int64_t total_steps) override {
    if (due != 1 || collected_ == nullptr) throw std::logic_error("LearnerDrive: one update per collected rollout");
    return run_on_policy_update(learner_, *collected_, bonus_, state, total_steps);
  }

 private:
  algos::OnPolicyLearner& learner_;
  RolloutCollector collector_;
  nn::ActorCritic model_;
  explore::Bonus* bonus_;
  const algos::Rollout* collected_ = nullptr;  // the last rollout, valid until the next collect()
};

class OffPolicyDrive final : public LearnerDrive {
 public:
  OffPolicyDrive(algos::OffPolicyLearner& learner, envs::BatchedEnvs& env, torch::Device device, Pacing pacing)
      : learner_(learner),
        collector_(env, device),
        actor_(learner.actor()),
        learning_starts_(pacing == Pacing::kRunSteps ? learner.learning_starts() : 0),
        train_frequency_(learner.train_frequency()) {}

  int64_t steps_per_collect() const override { return collector_.num_envs(); }
  void collect(int64_t global_step, int64_t total_steps, const EpisodeCallback& on_episode) override {
    const algos::ActingContext acting{false, global_step, total_steps, 0, 1};
    learner_.observe(collector_.step(actor_, acting, on_episode));
  }
  bool learning(int64_t global_step) const override { return global_step > learning_starts_; }
  int64_t updates_due(int64_t before, int64_t after) const override {
    return off_policy_updates_due(before, after, learning_starts_, train_frequency_);
  }
  algos::Metrics update(TrainingState& state, int64_t due, int64_t total_steps) override {
    return run_off_policy_updates(learner_, state, due, total_steps);
  }

 private:
  algos::OffPolicyLearner& learner_;
  TransitionCollector collector_;
  algos::Actor& actor_;
  int64_t learning_starts_;
  int64_t train_frequency_;
};

}  // namespace

std::unique_ptr<LearnerDrive> make_learner_drive(algos::Learner& learner, envs::BatchedEnvs& env, torch::Device device,
                                                 explore::Bonus* bonus, Pacing pacing) {
  refuse_bonus_off_policy(bonus, learner);
  if (auto* on_policy = algos::on_policy(learner)) {
    return std::make_unique<OnPolicyDrive>(*on_policy, env, device, bonus);
  }
  return std::make_unique<OffPolicyDrive>(*algos::off_policy(learner), env, device, pacing);
}

std::unique_ptr<algos::Learner> make_shared_learner(algos::Learner& learner) {
  if (auto* on_policy = algos::on_policy(learner)) return on_policy->make_shared_replica();
  return algos::off_policy(learner)->make_shared_replica();
}

}  // namespace concord::policies::runtime
