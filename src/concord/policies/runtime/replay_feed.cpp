#include "concord/policies/runtime/replay_feed.h"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

#include <c10/core/GradMode.h>

#include "concord/policies/runtime/apex_learner.h"

namespace concord::policies::runtime {
namespace {

// One feed_replay() call: the inlet the feeders store into, and the learner's view of the steps.
class Run final : public ReplayInlet, public ApexStepSource {
 public:
  Run(const ReplayFeedPlan& plan, algos::OffPolicyLearner& learner, core::EpisodeStats& episodes, TrainingState& state,
      int64_t total_steps, int64_t checkpoint_interval_steps, const TrainingCallbacks& callbacks)
      : plan_(plan),
        learner_(learner),
        episodes_(episodes),
        state_(state),
        total_steps_(total_steps),
        checkpoint_interval_steps_(checkpoint_interval_steps),
        callbacks_(callbacks),
        stored_(state.global_step),
        allowed_step_(initial_allowance(plan.pace, learner, state)),
        workers_(plan.policy, plan.pace.wait_timeout_seconds, "policy." + plan.policy + ".wait_timeout_seconds") {}

  void run() {
    versions_.publish(state_.updates, [&](at::Tensor& published) {
      c10::NoGradGuard no_grad;
      published = learner_.flat_parameters().values().detach().clone();
    });
    workers_.on_stop([this] {
      { std::lock_guard<std::mutex> lock(progress_mutex_); }
      updated_.notify_all();
      stored_.wake_all();
    });
    plan_.start_feeders(workers_, *this);
    // Updates start once some step of this run is observed: the happens-before that
    // OffPolicyLearner::observes_while_updating asks for.
    workers_.run([this] {
      learn_back_to_back(plan_.pace, learner_, *this, state_, total_steps_, checkpoint_interval_steps_,
                         stored_.pausing(callbacks_, state_), episodes_, plan_.actor_epsilons);
    });
    // Everything the feeders stored is in: the final count and the episodes not yet handed over.
    state_.global_step = stored_.count();
    hand_over_episodes();
  }

 private:
  // ---- ReplayInlet, on the feeders' threads ----

  bool stopping() const override { return workers_.stopping(); }
  int64_t stored() const override { return stored_.count(); }
  int64_t total_steps() const override { return total_steps_; }
  PublishedParameters& parameters() override { return versions_; }

  void wait_for_learner(const std::string& who) override {
    if (plan_.pace.max_env_steps_per_update == 0) return;
    const auto allowed = [&] { return workers_.stopping() || stored_.count() < allowed_step_.load(); };
    if (allowed()) return;
    std::unique_lock<std::mutex> lock(progress_mutex_);
    if (!updated_.wait_for(lock, workers_.timeout(), allowed)) {
      workers_.timed_out(who, "a learner update (" + plan_.pace_key + " = " +
                                  std::to_string(plan_.pace.max_env_steps_per_update) + ")");
    }
  }

  bool store(const std::vector<algos::TensorMap>& steps, int stream, const FinishedEpisodes& finished) override {
    {
      // Held only for observe() or a checkpoint: no timeout (a stuck checkpoint holds up the
      // learner's thread anyway).
      std::lock_guard<std::mutex> observing(stored_.mutex());
      if (stored_.count() >= total_steps_) return false;
      int64_t env_steps = 0;
      for (const algos::TensorMap& step : steps) {
        learner_.observe(step, stream);
        env_steps += step.at(algos::transition::kObservations).size(0);
      }
      stored_.add(env_steps, finished);
    }
    stored_.notify();
    return true;
  }

  // ---- ApexStepSource, on the learner's thread ----

  int64_t take_steps() override { return stored_.count(); }
  int64_t steps_taken() const override { return stored_.count(); }
  bool failed() const override { return workers_.failed(); }
  void after_update() override { hand_over_episodes(); }

  // Waits until global_step exceeds `beyond` (or reaches total_steps), a feeder fails or
  // should_stop says so; wait_timeout_seconds without any step is an error.
  void wait_for_steps(int64_t beyond) override {
    stored_.wait_beyond(
        beyond, total_steps_, [this] { return workers_.failed(); }, callbacks_, workers_.timeout(),
        "policy '" + plan_.policy + "': the " + plan_.feeder_noun + " took no step within " +
            std::to_string(plan_.pace.wait_timeout_seconds) + " s");
  }

  // Moves the feeders' allowance (max_env_steps_per_update) to `step`.
  void allow_steps(int64_t step) override {
    {
      std::lock_guard<std::mutex> lock(progress_mutex_);
      allowed_step_.store(step);
    }
    updated_.notify_all();
  }

  void publish(int64_t updates) override {
    versions_.publish(updates, [&](at::Tensor& published) {
      c10::NoGradGuard no_grad;
      published.copy_(learner_.flat_parameters().values().detach());
    });
  }

  // Calls on_episode, on this thread, for the episodes the feeders finished since the last call.
  void hand_over_episodes() {
    for (const auto& [episode_return, episode_length] : stored_.take_finished()) {
      record_episode(episodes_, callbacks_, episode_return, episode_length);
    }
  }

  const ReplayFeedPlan& plan_;
  algos::OffPolicyLearner& learner_;
  core::EpisodeStats& episodes_;
  TrainingState& state_;
  const int64_t total_steps_;
  const int64_t checkpoint_interval_steps_;
  const TrainingCallbacks& callbacks_;

  // observe(), global_step's increments and the episodes on their way to the learner.
  StoredSteps stored_;

  // The learner's progress. The feeders' allowance (max_env_steps_per_update) changes under
  // progress_mutex_.
  std::mutex progress_mutex_;
  std::condition_variable updated_;    // with progress_mutex_: the allowance moved, or a stop
  std::atomic<int64_t> allowed_step_;  // feeders start a step only while global_step is below it

  // Declared last: its threads are stopped and joined before anything above goes.
  runtime::Workers workers_;
  // The newest published parameters, which the feeders act from.
  PublishedParameters& versions_ = workers_.make<PublishedParameters>(
      1, [] { return at::Tensor(); }, "an actor");
};

}  // namespace

void feed_replay(const ReplayFeedPlan& plan, algos::OffPolicyLearner& learner, core::EpisodeStats& episodes,
                 TrainingState& state, int64_t total_steps, int64_t checkpoint_interval_steps,
                 const TrainingCallbacks& callbacks) {
  // Runs even when the state is already past total_steps: the feeders may have actors to stop.
  Run run(plan, learner, episodes, state, total_steps, checkpoint_interval_steps, callbacks);
  run.run();
}

std::vector<std::unique_ptr<algos::ActorReplica>> require_replay_feed(algos::OffPolicyLearner& learner,
                                                                      const std::string& policy, int copies) {
  if (!learner.observes_while_updating()) {
    throw NeedsOneThreadPolicy("policy '" + policy +
                               "' stores transitions while the learner updates, which this algorithm does not support");
  }
  std::vector<std::unique_ptr<algos::ActorReplica>> replicas;
  for (int i = 0; i < copies; ++i) {
    std::unique_ptr<algos::ActorReplica> replica = learner.make_actor_replica();
    if (replica == nullptr) {
      throw NeedsOneThreadPolicy("policy '" + policy +
                                 "' acts with copies of the learner's network, which this algorithm cannot make");
    }
    replicas.push_back(std::move(replica));
  }
  return replicas;
}

}  // namespace concord::policies::runtime
