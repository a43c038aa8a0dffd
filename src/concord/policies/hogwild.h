#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <torch/types.h>

#include "concord/algos/off_policy_learner.h"
#include "concord/algos/on_policy_learner.h"
#include "concord/core/config_fields.h"
#include "concord/envs/vector_env.h"
#include "concord/explore/bonus.h"
#include "concord/policies/policy.h"
#include "concord/policies/policy_context.h"

namespace concord::policies {

// How the `hogwild` policy is laid out (keys policy.hogwild.<field>).
struct HogwildConfig {
  int workers = 2;                     // actor-learner threads, each stepping env.num_envs envs
  double wait_timeout_seconds = 60.0;  // a checkpoint's wait for the updates in progress

  // Throws std::invalid_argument listing every bad field with its value.
  void validate() const;
  static const core::ConfigFields<HogwildConfig>& fields();
};

// The `hogwild` distribution policy (A3C, Mnih et al., 2016): W actor-learner threads, each with
// its own environments and its own replica of the learner, each running `single`'s loop on it
// (runtime::LearnerDrive). Every replica's parameters and
// optimiser statistics are the primary learner's (shared storage, A3C's shared RMSProp); only
// gradients are per thread. Each thread loops, without locks around the parameters:
//
//   rollout = collect T steps of its envs with the shared parameters (as they are right now)
//   replica.update(rollout)   -> each of the update's gradient steps (A2C: one; PPO: its epochs x
//                                minibatches) into its own gradient buffer, then an optimiser step
//                                on the shared parameters and statistics
//
// Forward and backward passes read parameters another worker is writing, by design (Hogwild!, Niu
// et al., 2011): plain float stores, never torn structures. Two locks: the optimiser steps take
// turns (algos/gradient_step.h says why), and a checkpoint (runtime::CheckpointGate) waits for the
// updates in progress and holds new ones off, so a saved state is consistent.
//
// While one worker takes its update's steps, the others' steps move the same parameters: PPO's
// ratio is taken against the behaviour log-probabilities its rollout recorded, so its clipping
// bounds the policy change whoever made it.
//
// Each update is one worker's, so each worker steps env.num_envs = n envs: every update sees the
// n x T batch the algorithm's settings are tuned for, as under every other policy (A3C tunes its
// settings per thread). The run steps W x n envs; worker w the run's [w x n, (w + 1) x n), seeded
// as `single` seeds a run of W x n. (Splitting n among the workers halved A2C's batch on
// CartPole and failed seeds that `single` did not: bench/RESULTS.md, "Policies".)
//
// Off-policy learners (DQN): A3C's asynchronous Q-learning (its Algorithm 1). Each worker acts
// with its replica (OffPolicyLearner::make_shared_replica: shared parameters, target network and
// optimiser statistics; its own final epsilon), queues its transitions, and at every multiple of
// train_frequency of its own env steps takes one gradient step on them (runtime::LearnerDrive,
// Pacing::kOwnSteps):
//
//   transition = one step of its envs, epsilon-greedy with the shared parameters
//   replica.observe(transition)
//   every train_frequency steps: replica.update()   -> the queued transitions' TD loss, one
//                                                      step; the shared target follows every
//                                                      target_network_frequency global steps
//
// There is no replay, so learning_starts does not apply.
//
// Requirements, checked at construction (std::invalid_argument naming the problem): a learner
// whose optimiser state can be shared. With an exploration `bonus`, every worker adds it to its
// rollouts (exploration_bonus.h); all workers count into the bonus's one table (on-policy only).
class HogwildPolicy : public Policy {
 public:
  HogwildPolicy(const HogwildConfig& config, const envs::VectorEnvConfig& env_config, algos::Learner& learner,
                torch::Device device, explore::Bonus* bonus = nullptr);

  void train(TrainingState& state, int64_t total_steps, int64_t checkpoint_interval_steps,
             const TrainingCallbacks& callbacks) override;

 private:
  HogwildConfig config_;
  torch::Device device_;
  explore::Bonus* bonus_;  // may be null; shared by every worker
  uint64_t seed_;          // the run's, for the workers' generators
  std::vector<std::unique_ptr<envs::VectorEnv>> envs_;
  std::vector<std::unique_ptr<algos::Learner>> replicas_;  // one per worker, of the learner's family
};

std::unique_ptr<Policy> make_hogwild_policy(const PolicyContext& context, const HogwildConfig& config);

}  // namespace concord::policies
