#include "concord/policies/async_learner_replay.h"

#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <c10/core/GradMode.h>

#include "concord/core/config_problems.h"
#include "concord/core/timer.h"
#include "concord/core/torch_thread.h"
#include "concord/policies/runtime/channel.h"
#include "concord/policies/runtime/metric_names.h"
#include "concord/policies/runtime/parameter_versions.h"
#include "concord/policies/runtime/transition_collector.h"
#include "concord/policies/runtime/workers.h"

namespace concord::policies {
namespace {

// Steps of every env on their way from the collector to the learner (off-policy learners): the
// steps up to the next one after which updates are due (or at most kMaxSegmentSteps of them), all
// acted by one version. One hand-over per update, not per step: a thread's wake-up costs more
// than a step.
struct CollectedSegment {
  std::vector<algos::TensorMap> transitions;                      // fresh tensors (TransitionCollector), in order
  std::vector<std::vector<std::pair<double, int64_t>>> episodes;  // per step: (return, length) ended
  int64_t version = 0;                                            // the parameter version that acted
  double seconds = 0.0;                                           // acting and stepping the envs
};
constexpr int64_t kMaxSegmentSteps = 64;

// How long an off-policy collector spins for the next version before it sleeps.
constexpr double kSpinSeconds = 0.002;

}  // namespace

AsyncLearnerReplayPolicy::AsyncLearnerReplayPolicy(AsyncLearnerConfig config, std::unique_ptr<envs::VectorEnv> env,
                                                   algos::OffPolicyLearner& learner, torch::Device device,
                                                   uint64_t seed)
    : config_(core::validated(config)),
      env_(std::move(env)),
      learner_(learner),
      device_(device),
      seed_(seed),
      replica_(learner.make_actor_replica()) {
  if (env_->is_async()) {
    throw std::invalid_argument("policy 'async_learner' steps all environments together: set env.batch_size = 0 (got " +
                                std::to_string(env_->batch_size()) + ")");
  }
  if (!replica_) {
    throw NeedsOneThreadPolicy(
        "policy 'async_learner' acts from a copy of the learner's network, which this algorithm cannot make "
        "(OffPolicyLearner::make_actor_replica)");
  }
}

void AsyncLearnerReplayPolicy::train(TrainingState& state, int64_t total_steps, int64_t checkpoint_interval_steps,
                                     const TrainingCallbacks& callbacks) {
  if (state.global_step >= total_steps) return;
  const AsyncLearnerConfig& config = config_;
  envs::VectorEnv& env = *env_;
  algos::OffPolicyLearner& learner = learner_;
  algos::ActorReplica& replica = *replica_;
  const torch::Device device = device_;
  const uint64_t seed = seed_;
  core::EpisodeStats& episodes = episodes_;
  const int64_t num_envs = env.num_envs();
  const int64_t learning_starts = learner.learning_starts();
  const int64_t train_frequency = learner.train_frequency();
  const int64_t lag = config.max_policy_lag;
  const int64_t first_step = state.global_step;
  // Segments the learner has observed go back to the collector, whose allocator made their
  // tensors: freed on the learner's thread, every free would take the lock of the collector's
  // malloc arena while the collector allocates from it.
  std::mutex spent_mutex;
  std::vector<CollectedSegment> spent;
  runtime::Workers workers("async_learner", config.wait_timeout_seconds, "policy.async_learner.wait_timeout_seconds");
  // Version v: the parameters after v update() calls of this run. The step the collector acts
  // needs version c - lag (c: updates due before it), and the learner can be at most c versions
  // along, since its updates follow steps the collector has sent. The collector spins through a
  // wait of about one update before it sleeps (bench/RESULTS.md, "DQN on CartPole").
  const at::Tensor start_values = learner.flat_parameters().values().detach();
  auto& versions = workers.make<runtime::ParameterVersions<at::Tensor>>(
      lag + 1, [&] { return start_values.clone(); }, "the collector", kSpinSeconds);
  versions.publish(0, [](at::Tensor&) {});
  replica.assign(start_values);  // a resumed learner has moved since the replica was made
  // The collector runs at most lag + 1 segments ahead once learning (it waits for versions).
  auto& segments =
      workers.make<runtime::Channel<CollectedSegment>>("transitions", lag + 2, "the collector", "the learner");

  workers.start("the collector", core::thread_seed(seed, 0), [&] {
    runtime::TransitionCollector collector(env, device);
    int64_t step = first_step;
    int64_t due = 0;     // updates of this run due before `step`
    int64_t acting = 0;  // the version in the replica
    while (step < total_steps) {
      const int64_t needed = std::max<int64_t>(0, due - lag);
      if (needed != acting) {
        versions.read(needed, [&](at::Tensor& values) { replica.assign(values); });
        acting = needed;
      }
      // Every step of a segment needs the same version: `due` grows only after its last step.
      CollectedSegment segment;
      segment.version = acting;
      core::Stopwatch clock;
      int64_t updates_after = 0;
      while (updates_after == 0 && step < total_steps &&
             static_cast<int64_t>(segment.transitions.size()) < kMaxSegmentSteps) {
        std::vector<std::pair<double, int64_t>>& ended = segment.episodes.emplace_back();
        segment.transitions.push_back(collector.step(replica, {false, step, total_steps, 0, 1},
                                                     [&](double episode_return, int64_t episode_length) {
                                                       ended.emplace_back(episode_return, episode_length);
                                                     }));
        updates_after = off_policy_updates_due(step, step + num_envs, learning_starts, train_frequency);
        step += num_envs;
      }
      due += updates_after;
      segment.seconds = clock.elapsed_seconds();
      std::vector<CollectedSegment> observed;
      {
        std::lock_guard<std::mutex> lock(spent_mutex);
        observed.swap(spent);
      }
      observed.clear();
      segments.push(std::move(segment));
    }
  });

  const auto publish = [&](int64_t version) {
    versions.publish(version, [&](at::Tensor& slot) {
      c10::NoGradGuard no_grad;
      slot.copy_(learner.flat_parameters().values().detach());
    });
  };
  workers.run([&] {
    UpdateReporter reporter(state, checkpoint_interval_steps);
    double rollout_seconds = 0.0, update_seconds = 0.0, wait_seconds = 0.0;
    int64_t version = 0;
    while (state.global_step < total_steps) {
      if (callbacks.should_stop && callbacks.should_stop()) break;
      CollectedSegment segment;
      core::Stopwatch wait_clock;
      if (!segments.pop(segment)) break;  // the collector failed: rethrown after the join
      wait_seconds += wait_clock.elapsed_seconds();
      rollout_seconds += segment.seconds;

      for (size_t i = 0; i < segment.transitions.size(); ++i) {
        for (const auto& [episode_return, episode_length] : segment.episodes[i]) {
          record_episode(episodes, callbacks, episode_return, episode_length);
        }
        learner.observe(segment.transitions[i]);
        const int64_t previous_step = state.global_step;
        state.global_step += num_envs;

        const int64_t due = off_policy_updates_due(previous_step, state.global_step, learning_starts, train_frequency);
        if (due == 0) continue;
        const int64_t lag_of_step = version - segment.version;
        core::Stopwatch update_clock;
        algos::Metrics metrics = run_off_policy_updates(learner, state, due, total_steps, [&] { publish(++version); });
        update_seconds += update_clock.elapsed_seconds();
        if (metrics.empty()) continue;
        metrics[runtime::metric::kPolicyLag] = static_cast<double>(lag_of_step);
        metrics[runtime::metric::kRolloutSeconds] = rollout_seconds;
        metrics[runtime::metric::kUpdateSeconds] = update_seconds;
        metrics[runtime::metric::kLearnerWaitSeconds] = wait_seconds;
        reporter.report(state, metrics, episodes, callbacks);
      }
      std::lock_guard<std::mutex> lock(spent_mutex);
      spent.push_back(std::move(segment));
    }
  });
}

std::unique_ptr<Policy> make_async_learner_replay_policy(const PolicyContext& context,
                                                         const AsyncLearnerConfig& config) {
  // An off-policy learner learns from replayed experience of older parameters by design: no lag
  // correction to require.
  return std::make_unique<AsyncLearnerReplayPolicy>(config, std::make_unique<envs::VectorEnv>(context.env_config),
                                                    context.off_policy_learner(), context.device,
                                                    context.env_config.seed);
}

}  // namespace concord::policies
