#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

#include "concord/algos/off_policy_learner.h"
#include "concord/core/episode_stats.h"
#include "concord/policies/policy.h"
#include "concord/policies/runtime/episode_message.h"
#include "concord/policies/runtime/replay_pacing.h"

namespace concord::policies::runtime {

// Where the Ape-X learner's env steps come from: actor threads of this process (apex.cpp) or
// actor ranks (apex_processes.cpp). Called on the learner's thread only.
class ApexStepSource {
 public:
  virtual ~ApexStepSource() = default;
  // The env steps in the learner's replay now (the source first observes whatever arrived).
  virtual int64_t take_steps() = 0;
  // Blocks until more than `beyond` steps can be taken, a failure, or should_stop; throws after
  // policy.apex.wait_timeout_seconds without a step.
  virtual void wait_for_steps(int64_t beyond) = 0;
  // Env steps the actors have taken so far, observed or on their way.
  virtual int64_t steps_taken() const = 0;
  // max_env_steps_per_update: the actors may take steps while steps_taken() is below `step`.
  virtual void allow_steps(int64_t step) = 0;
  // Makes the learner's current parameters, after `updates` updates, the actors' next ones.
  virtual void publish(int64_t updates) = 0;
  // An actor (or the source's own thread) failed: the learner stops.
  virtual bool failed() const = 0;
  // After each update: hands the episodes the actors finished to `record_episode`.
  virtual void after_update() {}
};

// The env steps in the learner's replay, for a source whose actors (threads, or rank 0's
// communication thread) observe() while the learner updates: counted under one mutex, which a
// checkpoint also holds, with the episodes they finished on their way to the learner's thread,
// and the learner's wait for more. Thread-safe.
class StoredSteps {
 public:
  explicit StoredSteps(int64_t global_step) : global_step_(global_step) {}
  // Held by every observe() with the count that follows it, and by checkpoints.
  std::mutex& mutex() { return mutex_; }
  int64_t count() const { return global_step_.load(); }
  // Counts `steps` more stored, and the episodes they finished; with mutex() held.
  void add(int64_t steps, const FinishedEpisodes& finished);
  // The episodes stored since the last call, for the learner's thread to report.
  FinishedEpisodes take_finished();
  // After add(), with mutex() held or not: wakes the learner if it waits for steps.
  void notify() {
    if (waiting_.load()) changed_.notify_all();
  }
  // Wakes every wait, at a stop.
  void wake_all();
  // `callbacks` with on_checkpoint run under mutex() after setting state.global_step to count():
  // no observe() and no step counted while the learner is saved, so the saved step is the replay's.
  TrainingCallbacks pausing(const TrainingCallbacks& callbacks, TrainingState& state);
  // Blocks until more than `beyond` steps are stored (or `total`), `failed()`, or
  // callbacks.should_stop says so. Throws std::runtime_error("<what> (at step N)") after
  // `patience` without a step stored.
  void wait_beyond(int64_t beyond, int64_t total, const std::function<bool()>& failed,
                   const TrainingCallbacks& callbacks, std::chrono::steady_clock::duration patience,
                   const std::string& what);

 private:
  std::mutex mutex_;
  std::condition_variable changed_;        // with mutex_: steps stored, or a stop
  std::atomic<int64_t> global_step_;       // changes under mutex_
  std::atomic<bool> waiting_{false};       // the learner waits on changed_; changes under mutex_
  FinishedEpisodes finished_;              // guarded by mutex_
  std::atomic<bool> has_finished_{false};  // finished_ is not empty; changes under mutex_
};

// The actors' first allowance under max_env_steps_per_update, the one learn_back_to_back starts
// from: max(learning_starts, the state's global_step) + max_env_steps_per_update.
int64_t initial_allowance(const ReplayPacing& config, const algos::OffPolicyLearner& learner,
                          const TrainingState& state);

// The learner's side of Ape-X, on the calling thread: from the first step past
// max(learning_starts, the state's global_step) on, learner.update() back to back (with
// min_env_steps_per_update = N, each after N more env steps); the
// parameters published every publish_every updates; every update reported with charts/SPS,
// charts/updates_per_env_step (since the first update of this run), time/update_seconds,
// time/learner_wait_seconds and the actors' exploration metrics (their contexts' averaged). An
// update that finds no batch in the replay (a resume) waits for more steps and lets the actors
// on. Returns at total_steps, when should_stop says so or the source failed.
void learn_back_to_back(const ReplayPacing& config, algos::OffPolicyLearner& learner, ApexStepSource& source,
                        TrainingState& state, int64_t total_steps, int64_t checkpoint_interval_steps,
                        const TrainingCallbacks& callbacks, const core::EpisodeStats& episodes,
                        const std::vector<double>& actor_epsilons);

}  // namespace concord::policies::runtime
