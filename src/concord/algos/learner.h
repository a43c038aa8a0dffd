#pragma once

#include <map>
#include <memory>
#include <string>

#include <torch/nn/module.h>

#include "concord/algos/actor.h"
#include "concord/core/checkpoint.h"
#include "concord/nn/flat_parameters.h"
#include "concord/sync/sync_strategy.h"

namespace concord::algos {

// The two algorithm families (on_policy_learner.h, off_policy_learner.h). A learner says which it
// is; the policy registry, which knows the families each policy drives, hands it to the policy's
// factory for that family (learner_family.h), so that no policy asks.
enum class Family { kOnPolicy, kOffPolicy };

// The Learner fragment: owns the parameters and the optimiser and turns Experience into
// updates. It knows nothing of threads, processes or how the Experience was gathered.
//
// What every algorithm provides, whatever Experience it learns from. The two families add how
// they take it:
//   OnPolicyLearner (on_policy_learner.h): a Rollout of T steps of every env, one update each;
//   OffPolicyLearner (off_policy_learner.h): transitions into its replay, updates on a schedule.
// The policy registry hands a policy's factory the family it drives (policies/policy_context.h)
// and refuses, in one line, an algorithm of a family the policy does not run.
//
// Not thread-safe: one caller at a time, except actor(), whose act() may run beside update()
// only where the policy says so.
class Learner {
 public:
  virtual ~Learner() = default;

  // The family this learner is of; each family's base class answers it.
  virtual Family family() const = 0;

  // The Actor fragment acting with this learner's current parameters (shared storage).
  virtual Actor& actor() = 0;
  // Whether the actor has memory (a recurrent network): act() returns a state that must come back
  // with each env's next observations (algos/actor.h). A policy that cannot carry it refuses the
  // learner at start-up (policy_registry.cpp).
  virtual bool acts_with_memory() const { return false; }
  // The network the actor runs, for what policies do to a model as a whole (broadcast its
  // buffers, copy it to another device).
  virtual torch::nn::Module& network() = 0;
  // The parameters that learn, as one flat buffer (and their flat gradient), for policies that
  // copy, publish or share them as a whole. Target networks and other derived copies are not in
  // it: they follow these parameters by the algorithm's own rule.
  virtual nn::FlatParameters& flat_parameters() = 0;

  // How this learner's replica agrees with replicas on other ranks (sync/sync_strategy.h): the
  // learner calls its hooks around every optimiser step (see gradient_step.h) and nothing else.
  // The default is sync::NoSync. Attaches the strategy to flat_parameters(), which makes every
  // replica start from rank 0's parameters. Call before training starts.
  void set_sync_strategy(std::shared_ptr<sync::SyncStrategy> strategy) {
    strategy->attach(flat_parameters());
    sync_strategy_ = std::move(strategy);
  }
  sync::SyncStrategy& sync_strategy() { return *sync_strategy_; }

  // Parameters, optimiser state and counters into / out of a checkpoint.
  virtual void save(core::Checkpoint& checkpoint) const = 0;
  // Throws core::CheckpointError naming what is missing or mismatched.
  virtual void load(const core::Checkpoint& checkpoint) = 0;

 private:
  std::shared_ptr<sync::SyncStrategy> sync_strategy_ = std::make_shared<sync::NoSync>();
};

}  // namespace concord::algos
