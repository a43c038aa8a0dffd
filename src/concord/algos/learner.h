#pragma once

#include <map>
#include <memory>
#include <string>

#include "concord/algos/rollout.h"
#include "concord/core/checkpoint.h"
#include "concord/nn/actor_critic.h"
#include "concord/nn/flat_parameters.h"
#include "concord/sync/sync_strategy.h"

namespace concord::algos {

using Metrics = std::map<std::string, double>;

// The Learner fragment: owns the parameters and the optimiser and turns Experience into an
// update. It knows nothing of threads, processes or how the Experience was gathered.
//
//   policy loop:  rollout = collect(actor, envs);  metrics = learner.update(rollout, progress);
//
// `progress` is the fraction of training done, in [0, 1], for schedules such as learning-rate
// annealing. Not thread-safe: one caller at a time.
class Learner {
 public:
  virtual ~Learner() = default;

  virtual Metrics update(const Rollout& rollout, double progress) = 0;
  // The network the Actor fragment reads for inference (shared in one process).
  virtual nn::ActorCritic model() = 0;
  // Steps of one environment per update (T of the Rollout it expects).
  virtual int64_t rollout_length() const = 0;
  // The model's parameters as one flat buffer (and their flat gradient), for policies that copy,
  // publish or share them as a whole.
  virtual nn::FlatParameters& flat_parameters() = 0;
  // Optimiser steps one update() takes (PPO: epochs x minibatches), or 0 when it varies from
  // update to update (PPO's early stop on target_kl). Policies that apply each update lock-free
  // to shared parameters (hogwild) need exactly 1; replicas in lockstep (multi_learner) need a
  // fixed number.
  virtual int64_t gradient_steps_per_update() const = 0;
  // Whether update() corrects for rollouts acted by older parameters than its own (PPO's
  // importance ratio against the behaviour log-probabilities; A2C only with V-trace). Policies
  // that overlap acting with learning, and so always lag, refuse a learner without it.
  virtual bool corrects_policy_lag() const { return false; }

  // How this learner's replica agrees with replicas on other ranks (sync/sync_strategy.h): the
  // learner calls its hooks around every optimiser step (see gradient_step.h) and nothing else.
  // The default is sync::NoSync. Attaches the strategy to flat_parameters(), which makes every
  // replica start from rank 0's parameters. Call before training starts.
  void set_sync_strategy(std::shared_ptr<sync::SyncStrategy> strategy) {
    strategy->attach(flat_parameters());
    sync_strategy_ = std::move(strategy);
  }
  sync::SyncStrategy& sync_strategy() { return *sync_strategy_; }

  // A learner with the same config whose parameters and optimiser statistics are this one's
  // (shared storage) but whose gradient buffer is its own: its update() changes this learner's
  // parameters in place, without locks (Hogwild!, A3C's shared RMSProp). Call before training
  // starts. Throws std::logic_error if the learner cannot share its optimiser state.
  virtual std::unique_ptr<Learner> make_shared_replica() = 0;

  // Parameters, optimiser state and counters into / out of a checkpoint.
  virtual void save(core::Checkpoint& checkpoint) const = 0;
  // Throws core::CheckpointError naming what is missing or mismatched.
  virtual void load(const core::Checkpoint& checkpoint) = 0;

 private:
  std::shared_ptr<sync::SyncStrategy> sync_strategy_ = std::make_shared<sync::NoSync>();
};

}  // namespace concord::algos
