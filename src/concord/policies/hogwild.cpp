#include "concord/policies/hogwild.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <stdexcept>
#include <string>

#include "concord/core/config_problems.h"
#include "concord/core/timer.h"
#include "concord/core/torch_thread.h"
#include "concord/policies/exploration_bonus.h"
#include "concord/policies/metric_names.h"
#include "concord/policies/rollout_collector.h"
#include "concord/policies/runtime/checkpoint_gate.h"
#include "concord/policies/runtime/env_shares.h"
#include "concord/policies/runtime/workers.h"
#include "concord/policies/transition_collector.h"

namespace concord::policies {

void HogwildConfig::validate() const {
  core::ConfigProblems problems;
  problems.check(workers >= 1, "workers", workers, ">= 1");
  problems.check(wait_timeout_seconds > 0.0, "wait_timeout_seconds", wait_timeout_seconds, "> 0");
  problems.throw_if_any("policy.hogwild config");
}

const core::ConfigFields<HogwildConfig>& HogwildConfig::fields() {
  static const core::ConfigFields<HogwildConfig> kFields = {
      {"workers", &HogwildConfig::workers, "Actor-learner threads, each stepping env.num_envs envs"},
      {"wait_timeout_seconds", &HogwildConfig::wait_timeout_seconds,
       "A checkpoint waiting longer than this for the updates in progress is an error naming it"},
  };
  return kFields;
}

HogwildPolicy::HogwildPolicy(const HogwildConfig& config, const envs::VectorEnvConfig& env_config,
                             algos::Learner& learner, torch::Device device, explore::Bonus* bonus)
    : config_(core::validated(config)), device_(device), bonus_(bonus), seed_(env_config.seed) {
  refuse_bonus_off_policy(bonus_, learner);
  auto* on_policy = dynamic_cast<algos::OnPolicyLearner*>(&learner);
  auto* off_policy = dynamic_cast<algos::OffPolicyLearner*>(&learner);
  // Every update is one worker's: for it to see the batch the algorithm is configured for
  // (env.num_envs x T, as under every other policy), each worker steps env.num_envs envs, A3C's
  // per-thread settings. The run's W x num_envs envs are seeded as `single` seeds that many.
  envs::VectorEnvConfig run_envs = env_config;
  run_envs.num_envs = env_config.num_envs * config_.workers;
  envs_ = runtime::thread_env_shares(run_envs, config_.workers, "hogwild", "worker", "workers");
  for (int w = 0; w < config_.workers; ++w) {
    if (on_policy != nullptr) {
      replicas_.push_back(on_policy->make_shared_replica());
    } else if (off_policy != nullptr) {
      off_replicas_.push_back(off_policy->make_shared_replica());
      if (!off_replicas_.back()) {
        throw NeedsOneThreadPolicy(
            "policy 'hogwild' shares the learner's parameters among its workers, which this algorithm cannot do");
      }
    }
  }
}

void HogwildPolicy::train(TrainingState& state, int64_t total_steps, int64_t checkpoint_interval_steps,
                          const TrainingCallbacks& callbacks) {
  std::atomic<int64_t> steps_claimed{state.global_step};  // A3C's shared counter T
  std::mutex report;  // callbacks, episode statistics and `state`, one thread at a time
  core::EpisodeStats episodes;
  UpdateReporter reporter(state, checkpoint_interval_steps);
  runtime::Workers workers("hogwild", config_.wait_timeout_seconds, "policy.hogwild.wait_timeout_seconds");
  auto& gate = workers.make<runtime::CheckpointGate>("a worker", "an update");
  TrainingCallbacks pausing = callbacks;
  if (callbacks.on_checkpoint) {
    pausing.on_checkpoint = [&](const TrainingState& at) { gate.paused([&] { callbacks.on_checkpoint(at); }); };
  }
  const auto on_episode = [&](double episode_return, int64_t episode_length) {
    std::lock_guard<std::mutex> lock(report);
    record_episode(episodes, callbacks, episode_return, episode_length);
  };
  // Counts worker w's update, which took the run to `reached` steps, and reports it with `extra`
  // (the bonus's or the actor's metrics).
  const auto updated = [&](int w, int64_t reached, algos::Metrics& metrics, const algos::Metrics& extra) {
    std::lock_guard<std::mutex> lock(report);
    state.global_step = std::max(state.global_step, reached);
    ++state.updates;
    check_finite(metrics, state);
    metrics.insert(extra.begin(), extra.end());
    metrics[metric::kWorker] = w;
    reporter.report(state, metrics, episodes, pausing);
    if (callbacks.should_stop && callbacks.should_stop()) workers.stop();
  };
  const auto progress_at = [&](int64_t reached) {
    return std::min(1.0, static_cast<double>(reached) / static_cast<double>(total_steps));
  };

  const auto on_policy_worker = [&](int w) {
    algos::OnPolicyLearner& replica = *replicas_[static_cast<size_t>(w)];
    RolloutCollector collector(*envs_[static_cast<size_t>(w)], replica.rollout_length(), device_);
    nn::ActorCritic model = replica.model();
    while (!workers.stopping()) {
      const int64_t claimed = steps_claimed.fetch_add(collector.env_steps_per_rollout());
      if (claimed >= total_steps) break;
      const algos::Rollout& collected = collector.collect(model, on_episode);
      algos::Metrics bonus_metrics;
      const algos::Rollout rollout = bonus_ ? with_bonus(*bonus_, collected, bonus_metrics) : collected;
      const int64_t reached = claimed + collector.env_steps_per_rollout();
      algos::Metrics metrics = gate.unit([&] { return replica.update(rollout, progress_at(reached)); });
      updated(w, reached, metrics, bonus_metrics);
    }
  };
  const auto off_policy_worker = [&](int w) {
    algos::OffPolicyLearner& replica = *off_replicas_[static_cast<size_t>(w)];
    TransitionCollector collector(*envs_[static_cast<size_t>(w)], device_);
    const int64_t steps = collector.num_envs();
    int64_t queued = 0;  // env steps observed since the worker's last update
    while (!workers.stopping()) {
      const int64_t claimed = steps_claimed.fetch_add(steps);
      if (claimed >= total_steps) break;
      const algos::ActingContext context{false, claimed, total_steps, 0, 1};
      replica.observe(collector.step(replica.actor(), context, on_episode));
      queued += steps;
      if (queued < replica.train_frequency()) continue;
      queued = 0;
      const int64_t reached = claimed + steps;
      algos::Metrics metrics = gate.unit([&] { return replica.update(reached, progress_at(reached)); });
      if (!metrics.empty()) updated(w, reached, metrics, replica.actor().exploration(context));
    }
  };
  // Each worker samples actions and minibatches from its own generator.
  const bool off_policy = !off_replicas_.empty();
  for (int w = 0; w < config_.workers; ++w) {
    workers.start("worker " + std::to_string(w), core::thread_seed(seed_, static_cast<uint64_t>(w)), [&, w] {
      if (off_policy) {
        off_policy_worker(w);
      } else {
        on_policy_worker(w);
      }
    });
  }
  workers.join();
  // Off-policy steps after a worker's last update are taken too.
  if (off_policy) state.global_step = std::max(state.global_step, std::min(steps_claimed.load(), total_steps));
}

std::unique_ptr<Policy> make_hogwild_policy(const PolicyContext& context, const HogwildConfig& config) {
  return std::make_unique<HogwildPolicy>(config, context.env_config, context.learner, context.device, context.bonus);
}

}  // namespace concord::policies
