#pragma once

#include <memory>
#include <stdexcept>

#include "concord/algos/actor_critic_actor.h"
#include "concord/algos/learner.h"
#include "concord/algos/rollout.h"
#include "concord/nn/actor_critic.h"

namespace concord::algos {

// The on-policy family (A2C, PPO): every update learns from one Rollout of T steps of every env,
// acted by an actor-critic with parameters at most a few updates old.
//
//   policy loop:  rollout = collect(actor, envs);  metrics = learner.update(rollout, progress);
//
// `progress` is the fraction of training done, in [0, 1], for schedules such as learning-rate
// annealing. Not thread-safe: one caller at a time.
class OnPolicyLearner : public Learner {
 public:
  Family family() const final { return Family::kOnPolicy; }

  virtual Metrics update(const Rollout& rollout, double progress) = 0;
  // The network the Actor fragment reads for inference (shared in one process).
  virtual nn::ActorCritic model() = 0;
  // Steps of one environment per update (T of the Rollout it expects).
  virtual int64_t rollout_length() const = 0;
  // Optimiser steps one update() takes (PPO: epochs x minibatches), or 0 when it varies from
  // update to update (PPO's early stop on target_kl). Policies that apply each update lock-free
  // to shared parameters (hogwild) need exactly 1; replicas in lockstep (multi_learner) need a
  // fixed number.
  virtual int64_t gradient_steps_per_update() const = 0;
  // Whether update() corrects for rollouts acted by older parameters than its own (PPO's
  // importance ratio against the behaviour log-probabilities; A2C only with V-trace). Policies
  // that overlap acting with learning, and so always lag, refuse a learner without it.
  virtual bool corrects_policy_lag() const { return false; }

  // A learner with the same config whose parameters and optimiser statistics are this one's
  // (shared storage) but whose gradient buffer is its own: its update() changes this learner's
  // parameters in place, without locks (Hogwild!, A3C's shared RMSProp). Call before training
  // starts. Throws std::logic_error if the learner cannot share its optimiser state.
  virtual std::unique_ptr<OnPolicyLearner> make_shared_replica() = 0;

  // The actor-critic acting: actions, with extras "log_probs" and "values".
  Actor& actor() override {
    if (!actor_) actor_ = std::make_unique<ActorCriticActor>(model());
    return *actor_;
  }
  torch::nn::Module& network() override { return *model(); }

 private:
  std::unique_ptr<ActorCriticActor> actor_;
};

// `learner` as the on-policy learner it is, for code that builds one by name and drives it as
// one (tests, benchmarks). Throws std::invalid_argument if it is of the other family.
inline std::unique_ptr<OnPolicyLearner> as_on_policy(std::unique_ptr<Learner> learner) {
  if (learner->family() != Family::kOnPolicy) {
    throw std::invalid_argument("an on-policy learner is needed here, and this algorithm learns off-policy");
  }
  return std::unique_ptr<OnPolicyLearner>(static_cast<OnPolicyLearner*>(learner.release()));
}

}  // namespace concord::algos
