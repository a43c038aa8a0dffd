#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <torch/types.h>

#include "concord/algos/experience.h"
#include "concord/algos/learner.h"
#include "concord/algos/rollout.h"
#include "concord/envs/vector_env.h"
#include "concord/explore/bonus.h"
#include "concord/policies/policy.h"

namespace concord::policies::runtime {

// What one collect() of a SplitDrive's acting half gathered, on its way to the learner's half.
struct Gathered {
  // Off-policy: one transition of every env (TransitionCollector's fresh tensors); on-policy: a
  // rollout of T steps of every env (an owned copy: the collector reuses its buffers).
  std::variant<algos::TensorMap, algos::Rollout> experience;
  std::vector<std::pair<double, int64_t>> episodes;  // (return, length) of those that ended in it
};

// One version of the learner's parameters as the learner publishes it for the acting half: the
// actor-critic with its buffers (on-policy, an ActorCopy), a flat copy (off-policy).
class ParameterSnapshot {
 public:
  virtual ~ParameterSnapshot() = default;
};

// The acting half of a SplitDrive: a copy of the learner's acting network and a collector over
// the envs. Made, used and destroyed on the acting thread alone.
class ActingHalf {
 public:
  virtual ~ActingHalf() = default;
  // Copies a published version into the acting copy.
  virtual void load(ParameterSnapshot& snapshot) = 0;
  // Gathers one unit, as LearnerDrive::collect does, acted by the copy: a rollout, or one step of
  // every env. `global_step` of a run of `total_steps` is where the run stands before it.
  virtual void collect(int64_t global_step, int64_t total_steps, Gathered& into) = 0;
};

// A LearnerDrive (learner_drive.h) split between two threads, for a policy whose acting runs on
// one thread, with a copy of the learner's network, while the learner learns on another
// (async_learner). The policy moves what the acting half gathers to the learner's half, and the
// learner's parameters back as snapshots; which version acts is the policy's to pick.
//
//   calling thread:  snapshots = make_snapshot() each; publish(snapshot, first version)
//   acting thread:   half = start_acting(); repeat: half.load(a snapshot); half.collect(...)
//   learner thread:  for each Gathered: take(it); due = updates_due(before, after)
//                                        if due: update(state, due, ..., after each: publish(...))
//
//   on-policy:  the copy is an ActorCopy of the actor-critic; a collect is a rollout (RolloutCollector),
//               taken whole by one update (with the exploration bonus, on the learner's thread);
//   off-policy: the copy is the learner's ActorReplica; a collect is one step of every env
//               (TransitionCollector), observed into the replay; updates fall as `single`'s do
//               (off_policy_updates_due).
//
// make_split_drive tells the families apart once, through for_family (learner_drive.h).
class SplitDrive {
 public:
  virtual ~SplitDrive() = default;

  // As LearnerDrive's: env steps of every env one collect() gathers (T x B on-policy, B
  // off-policy), and the updates due once collects took the run's global step from `before` to
  // `after`. Either thread.
  virtual int64_t steps_per_collect() const = 0;
  virtual int64_t updates_due(int64_t before, int64_t after) const = 0;
  // What errors call the experience on its way ("rollouts") and one unit of its collection in
  // progress ("a rollout").
  virtual std::string experience_name() const = 0;
  virtual std::string unit_name() const = 0;
  // How long the acting half spins for a version before it sleeps (ParameterVersions): an
  // off-policy update is short, and waking a sleeping thread would cost the learner a system
  // call per update (bench/RESULTS.md, "DQN on CartPole"); an on-policy one is not.
  virtual double version_spin_seconds() const = 0;

  // The calling thread, before the acting thread starts: a snapshot of the parameters as they are.
  virtual std::unique_ptr<ParameterSnapshot> make_snapshot() = 0;
  // The acting thread: its half (the collector resets the envs).
  virtual std::unique_ptr<ActingHalf> start_acting() = 0;

  // The learner's thread: copies the learner's parameters into `snapshot`, as `version`.
  virtual void publish(ParameterSnapshot& snapshot, int64_t version) = 0;
  // Takes one collect's experience: keeps the rollout for the next update() (on-policy), or
  // observes the transition into the replay (off-policy). `gathered` outlives that update().
  virtual void take(const Gathered& gathered) = 0;
  // As LearnerDrive::update, with after_each() after every update() call (a publish).
  virtual algos::Metrics update(TrainingState& state, int64_t due, int64_t total_steps,
                                const std::function<void()>& after_each) = 0;
};

// The split drive for `learner`'s family over `env` (synchronous), acting on `device`. `bonus`
// (may be null) is added to on-policy rollouts. Refuses, in one line naming `policy`: a bonus with
// an off-policy learner; an on-policy learner that does not correct a `max_policy_lag` > 0
// (require_lag_correction); an off-policy learner that cannot make an actor replica
// (NeedsOneThreadPolicy). Call it on the thread that built the learner.
std::unique_ptr<SplitDrive> make_split_drive(algos::Learner& learner, envs::BatchedEnvs& env, torch::Device device,
                                             explore::Bonus* bonus, const std::string& policy, int64_t max_policy_lag);

}  // namespace concord::policies::runtime
