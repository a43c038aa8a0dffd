#include "concord/policies/async_learner.h"

#include <algorithm>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "concord/core/config_problems.h"
#include "concord/core/timer.h"
#include "concord/core/torch_thread.h"
#include "concord/policies/actor_copy.h"
#include "concord/policies/exploration_bonus.h"
#include "concord/policies/policy_registry.h"
#include "concord/policies/rollout_collector.h"
#include "concord/policies/runtime/channel.h"
#include "concord/policies/runtime/checkpoint_gate.h"
#include "concord/policies/runtime/parameter_versions.h"
#include "concord/policies/runtime/workers.h"
#include "concord/policies/transition_collector.h"

namespace concord::policies {
namespace {

// A rollout on its way from the collector to the learner.
struct Collected {
  algos::Rollout rollout;                            // a deep copy: the collector reuses its buffers
  int64_t version = 0;                               // the parameter version that acted
  std::vector<std::pair<double, int64_t>> episodes;  // (return, length) of episodes that ended
  int64_t env_steps = 0;
  double seconds = 0.0;  // collecting it
};

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

// The setting that raises every wait's timeout, for the errors that name it.
constexpr const char* kTimeoutKey = "policy.async_learner.wait_timeout_seconds";

}  // namespace

void AsyncLearnerConfig::validate() const {
  core::ConfigProblems problems;
  problems.check(max_policy_lag >= 0, "max_policy_lag", max_policy_lag, ">= 0");
  problems.check(wait_timeout_seconds > 0.0, "wait_timeout_seconds", wait_timeout_seconds, "> 0");
  problems.throw_if_any("policy.async_learner config");
}

const core::ConfigFields<AsyncLearnerConfig>& AsyncLearnerConfig::fields() {
  using C = AsyncLearnerConfig;
  static const core::ConfigFields<C> kFields = {
      {"max_policy_lag", &C::max_policy_lag,
       "Updates a rollout's acting parameters may be behind the learner (1: collect the next rollout while learning "
       "from this one; 0: take turns, on-policy)"},
      {"wait_timeout_seconds", &C::wait_timeout_seconds,
       "A wait between the collector and the learner longer than this is an error naming it"},
  };
  return kFields;
}

AsyncLearnerPolicy::AsyncLearnerPolicy(AsyncLearnerConfig config, std::unique_ptr<envs::VectorEnv> env,
                                       algos::Learner& learner, torch::Device device, uint64_t seed,
                                       explore::Bonus* bonus)
    : config_(core::validated(config)),
      env_(std::move(env)),
      learner_(learner),
      device_(device),
      seed_(seed),
      bonus_(bonus) {
  if (env_->is_async()) {
    throw std::invalid_argument("policy 'async_learner' steps all environments together: set env.batch_size = 0 (got " +
                                std::to_string(env_->batch_size()) + ")");
  }
  refuse_bonus_off_policy(bonus_, learner_);
  if (auto* off_policy = dynamic_cast<algos::OffPolicyLearner*>(&learner_)) {
    replica_ = off_policy->make_actor_replica();
    if (!replica_) {
      throw std::invalid_argument(
          "policy 'async_learner' acts from a copy of the learner's network, which this algorithm cannot make "
          "(OffPolicyLearner::make_actor_replica); use train.policy " +
          one_thread_policies());
    }
  }
}

void AsyncLearnerPolicy::train(TrainingState& state, int64_t total_steps, int64_t checkpoint_interval_steps,
                               const TrainingCallbacks& callbacks) {
  if (auto* off_policy = dynamic_cast<algos::OffPolicyLearner*>(&learner_)) {
    train_off_policy(*off_policy, state, total_steps, checkpoint_interval_steps, callbacks);
    return;
  }
  auto* on_policy = dynamic_cast<algos::OnPolicyLearner*>(&learner_);
  if (on_policy == nullptr) throw std::logic_error("policy 'async_learner': the learner is of no known family");
  train_on_policy(*on_policy, state, total_steps, checkpoint_interval_steps, callbacks);
}

void AsyncLearnerPolicy::train_on_policy(algos::OnPolicyLearner& learner, TrainingState& state, int64_t total_steps,
                                         int64_t checkpoint_interval_steps, const TrainingCallbacks& callbacks) {
  if (state.global_step >= total_steps) return;
  const int64_t steps_per_rollout = learner.rollout_length() * env_->num_envs();
  const int64_t rollouts_wanted = (total_steps - state.global_step + steps_per_rollout - 1) / steps_per_rollout;
  const int64_t first_version = state.updates;
  const int64_t lag = config_.max_policy_lag;
  runtime::Workers workers("async_learner", config_.wait_timeout_seconds, kTimeoutKey);
  // Rollout k acts with exactly version first + k - lag (or first, while k < lag), so that which
  // parameters act never depends on how fast the learner is; the learner is then at most `lag`
  // versions past the one the collector reads.
  auto& versions = workers.make<runtime::ParameterVersions<ActorCopy>>(
      lag + 1, [&]() -> ActorCopy { return ActorCopy(learner); }, "the collector");
  versions.publish(first_version, [&](ActorCopy& copy) { copy.publish(learner, first_version); });
  auto& rollouts = workers.make<runtime::Channel<Collected>>("rollouts", lag + 1, "the collector", "the learner");
  // A checkpoint waits for the rollout in progress and holds off the next.
  auto& gate = workers.make<runtime::CheckpointGate>("the collector", "a rollout");

  workers.start("the collector", core::thread_seed(seed_, 0), [&] {
    ActorCopy acting(learner);  // the collector's own network, refreshed between rollouts
    RolloutCollector collector(*env_, learner.rollout_length(), device_);
    for (int64_t k = 0; k < rollouts_wanted; ++k) {
      const int64_t needed = std::max(first_version, first_version + k - lag);
      versions.read(needed, [&](ActorCopy& published) { published.copy_to(acting); });
      rollouts.push(gate.unit([&] {
        Collected item;
        core::Stopwatch clock;
        item.version = needed;
        acting.read([&](nn::ActorCritic& model, int64_t) {
          item.rollout = collector
                             .collect(model,
                                      [&](double episode_return, int64_t episode_length) {
                                        item.episodes.emplace_back(episode_return, episode_length);
                                      })
                             .clone();
        });
        item.env_steps = collector.env_steps_per_rollout();
        item.seconds = clock.elapsed_seconds();
        return item;
      }));
    }
  });

  TrainingCallbacks pausing = callbacks;
  if (callbacks.on_checkpoint) {
    pausing.on_checkpoint = [&](const TrainingState& at) { gate.paused([&] { callbacks.on_checkpoint(at); }); };
  }
  workers.run([&] {
    UpdateReporter reporter(state, checkpoint_interval_steps);
    double rollout_seconds = 0.0, update_seconds = 0.0, wait_seconds = 0.0;
    while (state.global_step < total_steps) {
      if (callbacks.should_stop && callbacks.should_stop()) break;
      Collected item;
      core::Stopwatch wait_clock;
      if (!rollouts.pop(item)) break;  // the collector failed: rethrown after the join
      wait_seconds += wait_clock.elapsed_seconds();
      for (const auto& [episode_return, episode_length] : item.episodes) {
        record_episode(episodes_, callbacks, episode_return, episode_length);
      }
      state.global_step += item.env_steps;
      rollout_seconds += item.seconds;

      core::Stopwatch update_clock;
      algos::Metrics bonus_metrics;
      const algos::Rollout rollout = bonus_ ? with_bonus(*bonus_, item.rollout, bonus_metrics) : item.rollout;
      const double progress = std::min(1.0, static_cast<double>(state.global_step) / static_cast<double>(total_steps));
      algos::Metrics metrics = learner.update(rollout, progress);
      const int64_t policy_lag = state.updates - item.version;
      const int64_t version = ++state.updates;
      versions.publish(version, [&](ActorCopy& copy) { copy.publish(learner, version); });
      update_seconds += update_clock.elapsed_seconds();
      check_finite(metrics, state);

      metrics.insert(bonus_metrics.begin(), bonus_metrics.end());
      metrics["charts/policy_lag"] = static_cast<double>(policy_lag);
      metrics["time/rollout_seconds"] = rollout_seconds;
      metrics["time/update_seconds"] = update_seconds;
      metrics["time/learner_wait_seconds"] = wait_seconds;
      reporter.report(state, metrics, episodes_, pausing);
    }
  });
}

void AsyncLearnerPolicy::train_off_policy(algos::OffPolicyLearner& learner, TrainingState& state, int64_t total_steps,
                                          int64_t checkpoint_interval_steps, const TrainingCallbacks& callbacks) {
  if (state.global_step >= total_steps) return;
  const int64_t num_envs = env_->num_envs();
  const int64_t learning_starts = learner.learning_starts();
  const int64_t train_frequency = learner.train_frequency();
  const int64_t lag = config_.max_policy_lag;
  const int64_t first_step = state.global_step;
  // Segments the learner has observed go back to the collector, whose allocator made their
  // tensors: freed on the learner's thread, every free would take the lock of the collector's
  // malloc arena while the collector allocates from it.
  std::mutex spent_mutex;
  std::vector<CollectedSegment> spent;
  runtime::Workers workers("async_learner", config_.wait_timeout_seconds, kTimeoutKey);
  // Version v: the parameters after v update() calls of this run. The step the collector acts
  // needs version c - lag (c: updates due before it), and the learner can be at most c versions
  // along, since its updates follow steps the collector has sent. The collector spins through a
  // wait of about one update before it sleeps (bench/RESULTS.md, "DQN on CartPole").
  const at::Tensor start_values = learner.flat_parameters().values().detach();
  auto& versions = workers.make<runtime::ParameterVersions<at::Tensor>>(
      lag + 1, [&] { return start_values.clone(); }, "the collector", kSpinSeconds);
  versions.publish(0, [](at::Tensor&) {});
  replica_->assign(start_values);  // a resumed learner has moved since the replica was made
  // The collector runs at most lag + 1 segments ahead once learning (it waits for versions).
  auto& segments =
      workers.make<runtime::Channel<CollectedSegment>>("transitions", lag + 2, "the collector", "the learner");

  workers.start("the collector", core::thread_seed(seed_, 0), [&] {
    TransitionCollector collector(*env_, device_);
    int64_t step = first_step;
    int64_t due = 0;     // updates of this run due before `step`
    int64_t acting = 0;  // the version in the replica
    while (step < total_steps) {
      const int64_t needed = std::max<int64_t>(0, due - lag);
      if (needed != acting) {
        versions.read(needed, [&](at::Tensor& values) { replica_->assign(values); });
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
        segment.transitions.push_back(collector.step(*replica_, {false, step, total_steps, 0, 1},
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
          record_episode(episodes_, callbacks, episode_return, episode_length);
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
        metrics["charts/policy_lag"] = static_cast<double>(lag_of_step);
        metrics["time/rollout_seconds"] = rollout_seconds;
        metrics["time/update_seconds"] = update_seconds;
        metrics["time/learner_wait_seconds"] = wait_seconds;
        reporter.report(state, metrics, episodes_, callbacks);
      }
      std::lock_guard<std::mutex> lock(spent_mutex);
      spent.push_back(std::move(segment));
    }
  });
}

std::unique_ptr<Policy> make_async_learner_policy(const PolicyContext& context, const AsyncLearnerConfig& config) {
  // An off-policy learner learns from replayed experience of older parameters by design.
  const bool on_policy = dynamic_cast<algos::OnPolicyLearner*>(&context.learner) != nullptr;
  if (on_policy && config.max_policy_lag > 0 && !context.on_policy_learner().corrects_policy_lag()) {
    throw std::invalid_argument(
        "policy 'async_learner' acts with parameters up to max_policy_lag = " + std::to_string(config.max_policy_lag) +
        " updates old, which this algorithm does not correct (A2C: set algo.a2c.vtrace = true; or set "
        "policy.async_learner.max_policy_lag = 0)");
  }
  return std::make_unique<AsyncLearnerPolicy>(config, std::make_unique<envs::VectorEnv>(context.env_config),
                                              context.learner, context.device, context.env_config.seed, context.bonus);
}

}  // namespace concord::policies
