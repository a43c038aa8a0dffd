#include "concord/policies/hogwild.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <stdexcept>
#include <string>

#include "concord/core/config_problems.h"
#include "concord/core/timer.h"
#include "concord/core/torch_thread.h"
#include "concord/policies/runtime/checkpoint_gate.h"
#include "concord/policies/runtime/env_shares.h"
#include "concord/policies/runtime/exploration_bonus.h"
#include "concord/policies/runtime/learner_drive.h"
#include "concord/policies/runtime/metric_names.h"
#include "concord/policies/runtime/workers.h"

namespace concord::policies {

void HogwildConfig::validate() const {
  core::ConfigProblems problems;
  problems.check(workers >= 1, "actors", workers, ">= 1");
  problems.check(wait_timeout_seconds > 0.0, "wait_timeout_seconds", wait_timeout_seconds, "> 0");
  problems.throw_if_any("policy.hogwild config");
}

const core::ConfigFields<HogwildConfig>& HogwildConfig::fields() {
  static const core::ConfigFields<HogwildConfig> kFields = {
      {"actors", &HogwildConfig::workers, "Actor-learner threads, each stepping env.num_envs envs", "workers"},
      {"wait_timeout_seconds", &HogwildConfig::wait_timeout_seconds,
       "A checkpoint waiting longer than this for the updates in progress is an error naming it"},
  };
  return kFields;
}

HogwildPolicy::HogwildPolicy(const HogwildConfig& config, const envs::VectorEnvConfig& env_config,
                             algos::Learner& learner, torch::Device device, explore::Bonus* bonus)
    : config_(core::validated(config)), device_(device), bonus_(bonus), seed_(env_config.seed) {
  runtime::refuse_bonus_off_policy(bonus_, learner);
  // Every update is one worker's: for it to see the batch the algorithm is configured for
  // (env.num_envs x T, as under every other policy), each worker steps env.num_envs envs, A3C's
  // per-thread settings. The run's W x num_envs envs are seeded as `single` seeds that many.
  envs::VectorEnvConfig run_envs = env_config;
  run_envs.num_envs = env_config.num_envs * config_.workers;
  envs_ = runtime::thread_env_shares(run_envs, config_.workers, "hogwild", "worker", "actors (policy.hogwild.actors)");
  for (int w = 0; w < config_.workers; ++w) {
    replicas_.push_back(runtime::make_shared_learner(learner));
    if (!replicas_.back()) {
      throw NeedsOneThreadPolicy(
          "policy 'hogwild' shares the learner's parameters among its workers, which this algorithm cannot do");
    }
  }
}

void HogwildPolicy::train(TrainingState& state, int64_t total_steps, int64_t checkpoint_interval_steps,
                          const TrainingCallbacks& callbacks) {
  std::atomic<int64_t> steps_claimed{state.global_step};  // A3C's shared counter T
  std::atomic<int64_t> updates_made{state.updates};       // for the update a failure names
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
  // Counts worker w's `made` updates, which took the run to `reached` steps, and reports them.
  const auto updated = [&](int w, int64_t reached, int64_t made, algos::Metrics& metrics) {
    std::lock_guard<std::mutex> lock(report);
    state.global_step = std::max(state.global_step, reached);
    state.updates += made;
    metrics[runtime::metric::kWorker] = w;
    reporter.report(state, metrics, episodes, pausing);
    if (callbacks.should_stop && callbacks.should_stop()) workers.stop();
  };

  // One body for both families (runtime::LearnerDrive): a rollout and its update (on-policy), or
  // a step and, every train_frequency of the worker's own steps, an update (off-policy).
  const auto worker = [&](int w) {
    const std::unique_ptr<runtime::LearnerDrive> drive =
        runtime::make_learner_drive(*replicas_[static_cast<size_t>(w)], *envs_[static_cast<size_t>(w)], device_, bonus_,
                                    runtime::Pacing::kOwnSteps);
    const int64_t steps = drive->steps_per_collect();
    int64_t own_steps = 0;
    while (!workers.stopping()) {
      const int64_t claimed = steps_claimed.fetch_add(steps);
      if (claimed >= total_steps) break;
      drive->collect(claimed, total_steps, on_episode);
      own_steps += steps;
      const int64_t due = drive->updates_due(own_steps - steps, own_steps);
      if (due == 0) continue;
      const int64_t reached = claimed + steps;
      // The worker's own view of the run, for the update's progress and a failure's line; the
      // shared state is counted under the lock.
      const int64_t before = updates_made.load();
      TrainingState at{reached, before};
      algos::Metrics metrics = gate.unit([&] { return drive->update(at, due, total_steps); });
      const int64_t made = at.updates - before;
      updates_made += made;
      if (!metrics.empty()) updated(w, reached, made, metrics);
    }
  };
  // Each worker samples actions and minibatches from its own generator.
  for (int w = 0; w < config_.workers; ++w) {
    workers.start("worker " + std::to_string(w), core::thread_seed(seed_, static_cast<uint64_t>(w)),
                  [&, w] { worker(w); });
  }
  workers.join();
  // Off-policy steps after a worker's last update are taken too.
  state.global_step = std::max(state.global_step, std::min(steps_claimed.load(), total_steps));
}

std::unique_ptr<Policy> make_hogwild_policy(const PolicyContext& context, const HogwildConfig& config) {
  return std::make_unique<HogwildPolicy>(config, context.env_config, context.learner, context.device, context.bonus);
}

}  // namespace concord::policies
