#pragma once

#include <cstdint>
#include <memory>

#include <torch/types.h>

#include "concord/algos/learner.h"
#include "concord/algos/learner_family.h"
#include "concord/envs/vector_env.h"
#include "concord/explore/bonus.h"
#include "concord/policies/policy.h"
#include "concord/policies/runtime/collector.h"

namespace concord::policies::runtime {

// How a policy's loop drives a learner of either family (algos/learner.h), so that the loop is
// written once: experience is gathered by a Collector in units, and after each unit the updates
// it made due are run.
//
//   repeat: collect()                                     one unit, acted by the learner's actor
//           global_step += steps_per_collect() (x ranks in lockstep)
//           due = updates_due(before, global_step);  if due: metrics = update(state, due)
//
//   on-policy:  a unit is a rollout of T steps of every env (RolloutCollector); every unit makes
//               one update due, learner.update(rollout + exploration bonus, progress);
//   off-policy: a unit is one step of every env, observed into the learner's replay
//               (TransitionCollector); updates fall at every multiple of train_frequency() past
//               learning_starts() (off_policy_updates_due), learner.update(global_step, progress).
//
// With for_family below, the one place besides the registry that tells the families apart:
// `single`, `sync_vector`, `multi_learner` and each `hogwild` worker run the loop above on it. The
// collector resets the envs when the drive is made. Not thread-safe; one drive per thread.
class LearnerDrive {
 public:
  using EpisodeCallback = Collector::EpisodeCallback;
  virtual ~LearnerDrive() = default;

  // Env steps of every env that one collect() gathers: T x B on-policy, B off-policy.
  virtual int64_t steps_per_collect() const = 0;
  // Gathers one unit with the learner's actor; `global_step` of a run of `total_steps` is where the
  // run stands before it (for the actor's schedules). on_episode is called for every ended episode.
  virtual void collect(int64_t global_step, int64_t total_steps, const EpisodeCallback& on_episode) = 0;
  // Whether an update can be due at `global_step` (off-policy: past learning_starts()); a loop
  // polls its stop request at every update, and only every so often before the first.
  virtual bool learning(int64_t global_step) const = 0;
  // The updates due after the last unit took the step count the policy paces updates by from
  // `before` to `after`: the run's global step (Pacing::kRunSteps), or the env steps of this
  // drive's own envs (Pacing::kOwnSteps).
  virtual int64_t updates_due(int64_t before, int64_t after) const = 0;
  // Runs `due` updates on what was gathered, at state.global_step of `total_steps`, counting each
  // that learnt in state.updates. Returns the last update's metrics, checked (check_finite), with
  // the exploration bonus's (on-policy) or the actor's exploration schedule (off-policy); empty
  // when no update found a batch in the replay.
  virtual algos::Metrics update(TrainingState& state, int64_t due, int64_t total_steps) = 0;
};

// How an off-policy learner's updates are paced (on-policy: one per rollout, either way).
enum class Pacing {
  // At every multiple of train_frequency() of the run's global step past learning_starts(): the
  // schedule of `single`, whatever the number of envs, threads or ranks in lockstep.
  kRunSteps,
  // At every multiple of train_frequency() of the drive's own env steps, from the first: A3C's
  // asynchronous Q-learning, whose threads each count their own steps and fill no replay.
  kOwnSteps,
};

// The drive for `learner`'s family over `env` (synchronous), acting on `device`. `bonus` (may be
// null) is added to on-policy rollouts; throws std::invalid_argument, in one line, for a bonus with
// an off-policy learner, or an asynchronous env.
std::unique_ptr<LearnerDrive> make_learner_drive(algos::Learner& learner, envs::BatchedEnvs& env, torch::Device device,
                                                 explore::Bonus* bonus = nullptr, Pacing pacing = Pacing::kRunSteps);

// Calls on_policy(OnPolicyLearner&) or off_policy(OffPolicyLearner&), whichever is `learner`'s
// family, and returns what it returns: for a policy whose one family-specific part is built from
// the learner (central_inference: where its agents' experience goes), so that it never asks.
template <typename OnPolicy, typename OffPolicy>
auto for_family(algos::Learner& learner, OnPolicy&& on_policy, OffPolicy&& off_policy) {
  if (auto* on_policy_learner = algos::on_policy(learner)) return on_policy(*on_policy_learner);
  return off_policy(*algos::off_policy(learner));
}

// A learner of `learner`'s family whose parameters and optimiser statistics are `learner`'s (shared
// storage) and whose gradients are its own, for threads that each act and learn lock-free
// (Hogwild!: OnPolicyLearner / OffPolicyLearner::make_shared_replica). Where the algorithm cannot
// share itself: nullptr (off-policy) or std::logic_error (on-policy, whose learners all can). Call it on the thread
// that built `learner`, before training starts.
std::unique_ptr<algos::Learner> make_shared_learner(algos::Learner& learner);

}  // namespace concord::policies::runtime
