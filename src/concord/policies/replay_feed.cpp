#include "concord/policies/replay_feed.h"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

#include <c10/core/GradMode.h>

#include "concord/core/torch_thread.h"
#include "concord/policies/apex_learner.h"
#include "concord/policies/policy_registry.h"
#include "concord/policies/transition_collector.h"

namespace concord::policies {
namespace {

// One feed_replay() call: what the actor threads and the learner (the calling thread) share, the
// actor loop and the learner's view of the steps.
class Run final : public ApexStepSource {
 public:
  Run(const ReplayFeedPlan& plan, algos::OffPolicyLearner& learner, std::vector<std::unique_ptr<envs::VectorEnv>>& envs,
      torch::Device device, uint64_t seed, core::EpisodeStats& episodes, TrainingState& state, int64_t total_steps,
      int64_t checkpoint_interval_steps, const TrainingCallbacks& callbacks)
      : plan_(plan),
        learner_(learner),
        envs_(envs),
        device_(device),
        seed_(seed),
        episodes_(episodes),
        state_(state),
        total_steps_(total_steps),
        checkpoint_interval_steps_(checkpoint_interval_steps),
        callbacks_(callbacks),
        stored_(state.global_step),
        claimed_(state.global_step),
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
    seats_ = plan_.seats(workers_, versions_);
    const int actors = static_cast<int>(envs_.size());
    for (int a = 0; a < actors; ++a) {
      std::string name = plan_.actor_noun + " " + std::to_string(a);
      if (plan_.distinct_exploration) name += " of " + std::to_string(actors);
      workers_.start(name, core::thread_seed(seed_, static_cast<uint64_t>(a)),
                     [this, a] { act(static_cast<size_t>(a), *seats_[static_cast<size_t>(a)]); });
    }
    // Updates start once some step of this run is observed: the happens-before that
    // OffPolicyLearner::observes_while_updating asks for.
    workers_.run([this] {
      learn_back_to_back(plan_.pace, learner_, *this, state_, total_steps_, checkpoint_interval_steps_,
                         stored_.pausing(callbacks_, state_), episodes_, exploring_actors());
    });
    // Everything the actors did is in: the final count and the episodes not yet handed over.
    state_.global_step = stored_.count();
    hand_over_episodes();
  }

 private:
  int exploring_actors() const { return plan_.distinct_exploration ? static_cast<int>(envs_.size()) : 1; }

  // ---- the actors ----

  void act(size_t a, ActingSeat& seat) {
    TransitionCollector collector(*envs_[a], device_);
    const int64_t steps = collector.num_envs();
    const int stream = static_cast<int>(a);
    const int explorer = plan_.distinct_exploration ? stream : 0;
    FinishedEpisodes finished;
    const auto on_episode = [&finished](double episode_return, int64_t episode_length) {
      finished.emplace_back(episode_return, episode_length);
    };

    while (!workers_.stopping()) {
      // Claim the steps first, so that the actors together take total_steps and no more.
      if (claimed_.fetch_add(steps) >= total_steps_) break;
      if (plan_.pace.max_env_steps_per_update > 0) wait_for_learner(a);
      if (workers_.stopping()) break;

      algos::Actor& actor = seat.next_actor(steps);
      const algos::ActingContext context{false, stored_.count(), total_steps_, explorer, exploring_actors()};
      algos::TensorMap step = collector.step(actor, context, on_episode);
      for (auto& [name, input] : seat.priority_inputs(step)) step[name] = std::move(input);

      {
        // Held only for an observe() or a checkpoint: no timeout (a stuck checkpoint holds up the
        // learner's thread anyway).
        std::lock_guard<std::mutex> observing(stored_.mutex());
        learner_.observe(step, stream);
        stored_.add(steps, finished);
      }
      finished.clear();
      stored_.notify();
    }
  }

  // max_env_steps_per_update: waits until global_step is below the learner's allowance, which
  // grows by that many steps with every update (and moves past global_step whenever an update
  // finds no batch in the replay, since only more steps can give it one). An actor that starts a
  // step below the allowance may end it past it, by its envs.
  void wait_for_learner(size_t a) {
    const auto allowed = [&] { return workers_.stopping() || stored_.count() < allowed_step_.load(); };
    if (allowed()) return;
    std::unique_lock<std::mutex> lock(progress_mutex_);
    if (!updated_.wait_for(lock, workers_.timeout(), allowed)) {
      workers_.timed_out(
          plan_.actor_noun + " " + std::to_string(a),
          "a learner update (" + plan_.pace_key + " = " + std::to_string(plan_.pace.max_env_steps_per_update) + ")");
    }
  }

  // ---- ApexStepSource, on the learner's thread ----

  int64_t take_steps() override { return stored_.count(); }
  int64_t steps_taken() const override { return stored_.count(); }
  bool failed() const override { return workers_.failed(); }
  void after_update() override { hand_over_episodes(); }

  // Waits until global_step exceeds `beyond` (or reaches total_steps), an actor fails or
  // should_stop says so; wait_timeout_seconds without any step is an error.
  void wait_for_steps(int64_t beyond) override {
    stored_.wait_beyond(
        beyond, total_steps_, [this] { return workers_.failed(); }, callbacks_, workers_.timeout(),
        "policy '" + plan_.policy + "': the " + plan_.actor_noun + "s took no step within " +
            std::to_string(plan_.pace.wait_timeout_seconds) + " s");
  }

  // Moves the actors' allowance (max_env_steps_per_update) to `step`.
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

  // Calls on_episode, on this thread, for the episodes the actors finished since the last call.
  void hand_over_episodes() {
    for (const auto& [episode_return, episode_length] : stored_.take_finished()) {
      record_episode(episodes_, callbacks_, episode_return, episode_length);
    }
  }

  const ReplayFeedPlan& plan_;
  algos::OffPolicyLearner& learner_;
  std::vector<std::unique_ptr<envs::VectorEnv>>& envs_;
  torch::Device device_;
  uint64_t seed_;
  core::EpisodeStats& episodes_;
  TrainingState& state_;
  const int64_t total_steps_;
  const int64_t checkpoint_interval_steps_;
  const TrainingCallbacks& callbacks_;

  // observe(), global_step's increments and the episodes on their way to the learner.
  StoredSteps stored_;            // steps observed and the episodes they finished, under its mutex
  std::atomic<int64_t> claimed_;  // steps claimed by actors (>= stored_)

  // The learner's progress. The actors' allowance (max_env_steps_per_update) changes under
  // progress_mutex_.
  std::mutex progress_mutex_;
  std::condition_variable updated_;    // with progress_mutex_: the allowance moved, or a stop
  std::atomic<int64_t> allowed_step_;  // actors start a step only while global_step is below it

  std::vector<std::unique_ptr<ActingSeat>> seats_;  // one per actor thread

  // Declared last: its threads are stopped and joined before anything above goes.
  runtime::Workers workers_;
  // The newest published parameters, which the seats act from.
  PublishedParameters& versions_ = workers_.make<PublishedParameters>(
      1, [] { return at::Tensor(); }, "an actor");
};

}  // namespace

void feed_replay(const ReplayFeedPlan& plan, algos::OffPolicyLearner& learner,
                 std::vector<std::unique_ptr<envs::VectorEnv>>& envs, torch::Device device, uint64_t seed,
                 core::EpisodeStats& episodes, TrainingState& state, int64_t total_steps,
                 int64_t checkpoint_interval_steps, const TrainingCallbacks& callbacks) {
  if (state.global_step >= total_steps) return;
  Run run(plan, learner, envs, device, seed, episodes, state, total_steps, checkpoint_interval_steps, callbacks);
  run.run();
}

std::vector<std::unique_ptr<algos::ActorReplica>> require_replay_feed(algos::OffPolicyLearner& learner,
                                                                      const std::string& policy, int copies) {
  if (!learner.observes_while_updating()) {
    throw std::invalid_argument("policy '" + policy +
                                "' stores transitions while the learner updates, which this algorithm does not "
                                "support; use train.policy " +
                                one_thread_policies());
  }
  std::vector<std::unique_ptr<algos::ActorReplica>> replicas;
  for (int i = 0; i < copies; ++i) {
    std::unique_ptr<algos::ActorReplica> replica = learner.make_actor_replica();
    if (replica == nullptr) {
      throw std::invalid_argument("policy '" + policy +
                                  "' acts with copies of the learner's network, which this algorithm cannot make; "
                                  "use train.policy " +
                                  one_thread_policies());
    }
    replicas.push_back(std::move(replica));
  }
  return replicas;
}

}  // namespace concord::policies
