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
#include "concord/core/timer.h"
#include "concord/core/torch_thread.h"
#include "concord/policies/apex_learner.h"
#include "concord/policies/apex_processes.h"
#include "concord/policies/policy_registry.h"
#include "concord/policies/runtime/env_shares.h"
#include "concord/policies/runtime/parameter_versions.h"
#include "concord/policies/runtime/workers.h"
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
        timeout_text_(std::to_string(config.wait_timeout_seconds) + " s"),
        stored_(state.global_step),
        claimed_(state.global_step),
        allowed_step_(initial_allowance(config, learner, state)),
        workers_("apex", config.wait_timeout_seconds, "policy.apex.wait_timeout_seconds") {}

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
    const int actors = static_cast<int>(envs_.size());
    for (int a = 0; a < actors; ++a) {
      workers_.start("actor " + std::to_string(a) + " of " + std::to_string(actors),
                     core::thread_seed(seed_, static_cast<uint64_t>(a)), [this, a] { act(static_cast<size_t>(a)); });
    }
    // Updates start once some step of this run is observed: the happens-before that
    // OffPolicyLearner::observes_while_updating asks for.
    workers_.run([this] {
      learn_back_to_back(config_, learner_, *this, state_, total_steps_, checkpoint_interval_steps_,
                         stored_.pausing(callbacks_, state_), episodes_, static_cast<int>(envs_.size()));
    });
    // Everything the actors did is in: the final count and the episodes not yet handed over.
    state_.global_step = stored_.count();
    hand_over_episodes();
  }

 private:
  // ---- the actors ----

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

    while (!workers_.stopping()) {
      // Claim the steps first, so that the actors together take total_steps and no more.
      if (claimed_.fetch_add(steps) >= total_steps_) break;
      if (config_.max_env_steps_per_update > 0) wait_for_learner(a);
      if (workers_.stopping()) break;

      if (steps_since_refresh >= config_.refresh_every) {
        steps_since_refresh = 0;
        if (versions_.latest() != acting_version) {
          acting_version = versions_.read_newest([&](at::Tensor& published) { replica.assign(published); });
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
    const auto allowed = [&] { return workers_.stopping() || stored_.count() < allowed_step_.load(); };
    if (allowed()) return;
    std::unique_lock<std::mutex> lock(progress_mutex_);
    if (!updated_.wait_for(lock, workers_.timeout(), allowed)) {
      workers_.timed_out("actor " + std::to_string(a), "a learner update (policy.apex.max_env_steps_per_update = " +
                                                           std::to_string(config_.max_env_steps_per_update) + ")");
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
  const std::string timeout_text_;

  // observe(), global_step's increments and the episodes on their way to the learner.
  StoredSteps stored_;            // steps observed and the episodes they finished, under its mutex
  std::atomic<int64_t> claimed_;  // steps claimed by actors (>= stored_)

  // The learner's progress. The actors' allowance (max_env_steps_per_update) changes under
  // progress_mutex_.
  std::mutex progress_mutex_;
  std::condition_variable updated_;    // with progress_mutex_: the allowance moved, or a stop
  std::atomic<int64_t> allowed_step_;  // actors start a step only while global_step is below it

  // Declared last: its threads are stopped and joined before anything above goes.
  runtime::Workers workers_;
  // The newest published parameters, read by the actors every refresh_every steps.
  runtime::ParameterVersions<at::Tensor>& versions_ = workers_.make<runtime::ParameterVersions<at::Tensor>>(
      1, [] { return at::Tensor(); }, "an actor");
};

}  // namespace

ApexPolicy::ApexPolicy(ApexConfig config, const envs::VectorEnvConfig& env_config, algos::OffPolicyLearner& learner,
                       torch::Device device)
    : config_(core::validated(config)), learner_(learner), device_(device), seed_(env_config.seed) {
  if (!learner_.observes_while_updating()) {
    throw std::invalid_argument(
        "policy 'apex' stores transitions while the learner updates, which this algorithm does not support; use "
        "train.policy " +
        one_thread_policies());
  }
  const int actors = config_.actors;
  runtime::env_share(env_config, 0, actors, "apex", "actors (policy.apex.actors)");
  runtime::require_thread_envs(env_config, "apex", "actor");
  for (int a = 0; a < actors; ++a) {
    std::unique_ptr<algos::ActorReplica> replica = learner_.make_actor_replica();
    if (replica == nullptr) {
      throw std::invalid_argument(
          "policy 'apex' acts with copies of the learner's network, which this algorithm cannot make; use "
          "train.policy " +
          one_thread_policies());
    }
    replicas_.push_back(std::move(replica));
    envs_.push_back(std::make_unique<envs::VectorEnv>(
        runtime::env_share(env_config, a, actors, "apex", "actors (policy.apex.actors)")));
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
