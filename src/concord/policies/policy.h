#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>

#include "concord/algos/learner.h"
#include "concord/algos/off_policy_learner.h"
#include "concord/core/episode_stats.h"
#include "concord/core/timer.h"

namespace concord::policies {

// Where the training loop stands; saved in every checkpoint and restored on resume.
struct TrainingState {
  int64_t global_step = 0;  // environment steps taken, summed over all envs
  int64_t updates = 0;      // learner updates done
};

// What a policy reports to its owner (the CLI, a benchmark). Whatever threads a policy runs,
// it calls these one at a time and never while the learner is updating, so a checkpoint taken
// in on_checkpoint is consistent.
struct TrainingCallbacks {
  // After every update, with the learner's metrics plus charts/* and time/* from the policy.
  std::function<void(const TrainingState&, const algos::Metrics&, const core::EpisodeStats&)> on_update;
  // When a checkpoint is due (every checkpoint_interval_steps, or when checkpoint_requested says
  // so); the owner saves one at the end.
  std::function<void(const TrainingState&)> on_checkpoint;
  // Polled after every update; true makes a checkpoint due now, whatever the step (the CLI's
  // train.checkpoint_interval_seconds).
  std::function<bool()> checkpoint_requested;
  // Polled regularly; returning true stops the run cleanly (e.g. on SIGINT).
  std::function<bool()> should_stop;
  // When an episode ends, with its return and length (benchmarks time the first solved window).
  std::function<void(double episode_return, int64_t episode_length)> on_episode;
};

// A distribution policy: owns the executors (threads), the environments, the queues and where
// inference runs, and drives the algorithm's fragments (the Learner and its model as Actor).
// The algorithm code is the same under every policy; see policy_registry.h for the names.
class Policy {
 public:
  virtual ~Policy() = default;
  // Trains until state.global_step >= total_steps or callbacks.should_stop() says so. Throws
  // std::runtime_error naming the update and step if a loss becomes NaN or infinite, and
  // whatever a worker thread threw (after stopping and joining every thread).
  virtual void train(TrainingState& state, int64_t total_steps, int64_t checkpoint_interval_steps,
                     const TrainingCallbacks& callbacks) = 0;
  // Whether the run goes on when a rank other than 0 fails (a policy that drops a dead actor
  // rank), so that a launcher must not stop the others for it. False by default.
  virtual bool survives_failed_ranks() const { return false; }
};

// A refusal that the policies whose model runs on one thread alone would not make: make_policy
// completes its one line with their names, from the registry ("...; use train.policy single or
// sync_vector"), so that no policy needs to know the others.
class NeedsOneThreadPolicy : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// What check_finite throws: the learner's numbers went wrong, so its state is not worth saving.
class NonFiniteMetric : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws NonFiniteMetric naming the first metric that is NaN or infinite.
void check_finite(const algos::Metrics& metrics, const TrainingState& state);

// Counts an ended episode in `episodes` and passes it to callbacks.on_episode.
void record_episode(core::EpisodeStats& episodes, const TrainingCallbacks& callbacks, double episode_return,
                    int64_t episode_length);

// The updates an off-policy loop (off_policy_learner.h) runs after a step that takes global_step
// from `before` to `after`: one for every multiple of train_frequency in (max(before,
// learning_starts), after]. The one schedule of `single`, `sync_vector` and `async_learner`.
int64_t off_policy_updates_due(int64_t before, int64_t after, int64_t learning_starts, int64_t train_frequency);

// Those updates: learner.update(state.global_step, progress) `due` times, after_each() (if set)
// after every call, state.updates counting the calls that returned metrics. Returns the last
// metrics, checked (check_finite) and with the actor's exploration metrics at global_step added;
// empty when no update found a batch in the replay.
algos::Metrics run_off_policy_updates(algos::OffPolicyLearner& learner, TrainingState& state, int64_t due,
                                      int64_t total_steps, const std::function<void()>& after_each = nullptr);

// The end of an update, the same in every policy's loop. Made when the loop starts (a resumed
// run's first checkpoint falls at the next multiple of checkpoint_interval_steps).
class UpdateReporter {
 public:
  UpdateReporter(const TrainingState& start, int64_t checkpoint_interval_steps);

  // Env steps per second of wall time since the loop started.
  double steps_per_second(int64_t global_step) const;
  double elapsed_seconds() const { return clock_.elapsed_seconds(); }

  // Adds charts/SPS (unless the loop measured it itself) and the recent episodes'
  // charts/episodic_return and charts/episodic_length to `metrics`, calls on_update, then
  // on_checkpoint if checkpoint_due(state.global_step, callbacks), both with gradients off.
  void report(const TrainingState& state, algos::Metrics& metrics, const core::EpisodeStats& episodes,
              const TrainingCallbacks& callbacks);
  // Whether global_step reached the next checkpoint (if so the next one moves on by the
  // interval) or callbacks.checkpoint_requested asks for one.
  bool checkpoint_due(int64_t global_step, const TrainingCallbacks& callbacks);

 private:
  int64_t checkpoint_interval_steps_;
  int64_t next_checkpoint_step_;
  int64_t steps_at_start_;
  core::Stopwatch clock_;
};

}  // namespace concord::policies
