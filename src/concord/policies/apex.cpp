#include "concord/policies/apex.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <c10/core/GradMode.h>
#include <torch/torch.h>

#include "concord/core/config_problems.h"
#include "concord/core/first_failure.h"
#include "concord/core/timer.h"
#include "concord/core/torch_thread.h"
#include "concord/policies/apex_learner.h"
#include "concord/policies/apex_processes.h"
#include "concord/policies/transition_collector.h"

namespace concord::policies {
namespace {

// One train() call: what the actor threads and the learner (the calling thread) share, the actor
// loop and the learner loop.
class Run final : public ApexStepSource {
 public:
  Run(const ApexConfig& config, algos::OffPolicyLearner& learner, std::vector<std::unique_ptr<envs::VectorEnv>>& envs,
      std::vector<std::unique_ptr<algos::ActorReplica>>& replicas, torch::Device device, uint64_t seed,
      core::EpisodeStats& episodes, TrainingState& state, int64_t total_steps, int64_t checkpoint_interval_steps,
      const TrainingCallbacks& callbacks)
      : config_(config),
        learner_(learner),
        envs_(envs),
        replicas_(replicas),
        device_(device),
        seed_(seed),
        episodes_(episodes),
        state_(state),
        total_steps_(total_steps),
        checkpoint_interval_steps_(checkpoint_interval_steps),
        callbacks_(callbacks),
        timeout_(core::steady_duration(config.wait_timeout_seconds)),
        timeout_text_(std::to_string(config.wait_timeout_seconds) + " s"),
        stored_(state.global_step),
        claimed_(state.global_step),
        allowed_step_(initial_allowance(config, learner, state)) {}

  void run() {
    {
      c10::NoGradGuard no_grad;
      published_ = learner_.flat_parameters().values().detach().clone();
    }
    version_.store(state_.updates);
    std::vector<std::thread> threads;
    try {
      for (size_t a = 0; a < envs_.size(); ++a) {
        threads.push_back(core::torch_thread(core::thread_seed(seed_, a), [this, a] { guarded_actor(a); }));
      }
      learn();
    } catch (...) {
      stop_and_join(threads);
      throw;
    }
    stop_and_join(threads);
    // Everything the actors did is in: the final count and the episodes not yet handed over.
    state_.global_step = stored_.count();
    hand_over_episodes();
    failure_.rethrow_if_any();
  }

 private:
  // ---- the actors ----

  void guarded_actor(size_t a) {
    try {
      act(a);
    } catch (const std::exception& error) {
      fail(std::make_exception_ptr(std::runtime_error("policy 'apex': actor " + std::to_string(a) + " of " +
                                                      std::to_string(envs_.size()) + " failed: " + error.what())));
    } catch (...) {
      fail(std::make_exception_ptr(std::runtime_error("policy 'apex': actor " + std::to_string(a) + " of " +
                                                      std::to_string(envs_.size()) + " failed")));
    }
  }

  void act(size_t a) {
    algos::ActorReplica& replica = *replicas_[a];
    TransitionCollector collector(*envs_[a], device_);
    const int64_t steps = collector.num_envs();
    const int stream = static_cast<int>(a);
    const int num_actors = static_cast<int>(envs_.size());
    int64_t acting_version = -1;
    int64_t steps_since_refresh = config_.refresh_every;  // the first step refreshes
    FinishedEpisodes finished;
    const auto on_episode = [&finished](double episode_return, int64_t episode_length) {
      finished.emplace_back(episode_return, episode_length);
    };

    while (!stopping_.load()) {
      // Claim the steps first, so that the actors together take total_steps and no more.
      if (claimed_.fetch_add(steps) >= total_steps_) break;
      if (config_.max_env_steps_per_update > 0) wait_for_learner(a);
      if (stopping_.load()) break;

      if (steps_since_refresh >= config_.refresh_every) {
        steps_since_refresh = 0;
        if (version_.load() != acting_version) {
          std::lock_guard<std::mutex> lock(publishing_);
          replica.assign(published_);
          acting_version = version_.load();
        }
      }
      const algos::ActingContext context{false, stored_.count(), total_steps_, stream, num_actors};
      algos::TensorMap step = collector.step(replica, context, on_episode);
      steps_since_refresh += steps;
      for (auto& [name, input] : replica.priority_inputs(step)) step[name] = std::move(input);

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
    const auto allowed = [&] { return stopping_.load() || stored_.count() < allowed_step_.load(); };
    if (allowed()) return;
    std::unique_lock<std::mutex> lock(progress_mutex_);
    if (!updated_.wait_for(lock, timeout_, allowed)) {
      throw std::runtime_error("waited " + timeout_text_ + " for a learner update (policy.apex." +
                               "max_env_steps_per_update = " + std::to_string(config_.max_env_steps_per_update) +
                               ", actor " + std::to_string(a) + ")");
    }
  }

  // ---- the learner ----

  void learn() {
    // Updates start once some step of this run is observed: the happens-before that
    // OffPolicyLearner::observes_while_updating asks for.
    learn_back_to_back(config_, learner_, *this, state_, total_steps_, checkpoint_interval_steps_,
                       stored_.pausing(callbacks_, state_), episodes_, static_cast<int>(envs_.size()));
  }

  // ---- ApexStepSource, on the learner's thread ----

  int64_t take_steps() override { return stored_.count(); }
  int64_t steps_taken() const override { return stored_.count(); }
  bool failed() const override { return failure_.failed(); }
  void after_update() override { hand_over_episodes(); }

  // Waits until global_step exceeds `beyond` (or reaches total_steps), an actor fails or
  // should_stop says so; wait_timeout_seconds without any step is an error.
  void wait_for_steps(int64_t beyond) override {
    stored_.wait_beyond(
        beyond, total_steps_, [this] { return failure_.failed(); }, callbacks_, timeout_,
        "policy 'apex': the actors took no step within " + timeout_text_);
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
    c10::NoGradGuard no_grad;
    std::lock_guard<std::mutex> lock(publishing_);
    published_.copy_(learner_.flat_parameters().values().detach());
    version_.store(updates);
  }

  // Calls on_episode, on this thread, for the episodes the actors finished since the last call.
  void hand_over_episodes() {
    for (const auto& [episode_return, episode_length] : stored_.take_finished()) {
      record_episode(episodes_, callbacks_, episode_return, episode_length);
    }
  }

  // ---- stopping ----

  void fail(std::exception_ptr error) {
    failure_.record(std::move(error));
    stop();
  }

  // Wakes every wait; the actors leave their loop at the next check.
  void stop() {
    stopping_.store(true);
    { std::lock_guard<std::mutex> lock(progress_mutex_); }
    updated_.notify_all();
    stored_.wake_all();
  }

  void stop_and_join(std::vector<std::thread>& threads) {
    stop();
    for (std::thread& thread : threads) {
      if (thread.joinable()) thread.join();
    }
  }

  const ApexConfig& config_;
  algos::OffPolicyLearner& learner_;
  std::vector<std::unique_ptr<envs::VectorEnv>>& envs_;
  std::vector<std::unique_ptr<algos::ActorReplica>>& replicas_;
  torch::Device device_;
  uint64_t seed_;
  core::EpisodeStats& episodes_;
  TrainingState& state_;
  const int64_t total_steps_;
  const int64_t checkpoint_interval_steps_;
  const TrainingCallbacks& callbacks_;
  const std::chrono::steady_clock::duration timeout_;
  const std::string timeout_text_;

  // observe(), global_step's increments and the episodes on their way to the learner.
  StoredSteps stored_;            // steps observed and the episodes they finished, under its mutex
  std::atomic<int64_t> claimed_;  // steps claimed by actors (>= stored_)

  // The published parameters.
  std::mutex publishing_;
  at::Tensor published_;             // guarded by publishing_
  std::atomic<int64_t> version_{0};  // the learner updates they are from; changes under publishing_

  // The learner's progress. The actors' allowance (max_env_steps_per_update) changes under
  // progress_mutex_.
  std::mutex progress_mutex_;
  std::condition_variable updated_;    // with progress_mutex_: the allowance moved, or a stop
  std::atomic<int64_t> allowed_step_;  // actors start a step only while global_step is below it

  std::atomic<bool> stopping_{false};
  core::FirstFailure failure_;  // the first thread's error; rethrown after the join
};

}  // namespace

ApexPolicy::ApexPolicy(ApexConfig config, const envs::VectorEnvConfig& env_config, algos::OffPolicyLearner& learner,
                       torch::Device device)
    : config_(core::validated(config)), learner_(learner), device_(device), seed_(env_config.seed) {
  if (!learner_.observes_while_updating()) {
    throw std::invalid_argument(
        "policy 'apex' stores transitions while the learner updates, which this algorithm does not support; use "
        "train.policy single or sync_vector");
  }
  const int actors = config_.actors;
  if (env_config.num_envs % actors != 0) {
    throw std::invalid_argument("policy 'apex': env.num_envs = " + std::to_string(env_config.num_envs) +
                                " must be divisible by its " + std::to_string(actors) + " actors (policy.apex.actors)");
  }
  if (env_config.num_threads != 1 || env_config.batch_size != 0) {
    throw std::invalid_argument(
        "policy 'apex' gives each actor thread its own synchronous envs: set env.num_threads = 1 and "
        "env.batch_size = 0");
  }
  for (int a = 0; a < actors; ++a) {
    std::unique_ptr<algos::ActorReplica> replica = learner_.make_actor_replica();
    if (replica == nullptr) {
      throw std::invalid_argument(
          "policy 'apex' acts with copies of the learner's network, which this algorithm cannot make; use "
          "train.policy single or sync_vector");
    }
    replicas_.push_back(std::move(replica));
    envs_.push_back(std::make_unique<envs::VectorEnv>(envs::env_slice(env_config, a, actors)));
  }
}

void ApexPolicy::train(TrainingState& state, int64_t total_steps, int64_t checkpoint_interval_steps,
                       const TrainingCallbacks& callbacks) {
  if (state.global_step >= total_steps) return;
  Run run(config_, learner_, envs_, replicas_, device_, seed_, episodes_, state, total_steps, checkpoint_interval_steps,
          callbacks);
  run.run();
}

std::unique_ptr<Policy> make_apex_policy(const PolicyContext& context, const ApexConfig& config) {
  auto* learner = dynamic_cast<algos::OffPolicyLearner*>(&context.learner);
  if (learner == nullptr) throw std::logic_error("policy 'apex': the learner is not an off-policy learner");
  if (context.communicator != nullptr && context.communicator->world_size() > 1) {
    return std::make_unique<ApexProcessesPolicy>(config, context.env_config, *learner, context.device,
                                                 *context.communicator);
  }
  return std::make_unique<ApexPolicy>(config, context.env_config, *learner, context.device);
}

}  // namespace concord::policies
