#include "concord/policies/hogwild.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <shared_mutex>
#include <stdexcept>
#include <string>
#include <thread>

#include "concord/core/config_problems.h"
#include "concord/core/timer.h"
#include "concord/core/torch_thread.h"
#include "concord/policies/exploration_bonus.h"
#include "concord/policies/rollout_collector.h"

namespace concord::policies {

void HogwildConfig::validate() const {
  core::ConfigProblems problems;
  problems.check(workers >= 1, "workers", workers, ">= 1");
  problems.throw_if_any("policy.hogwild config");
}

const core::ConfigFields<HogwildConfig>& HogwildConfig::fields() {
  static const core::ConfigFields<HogwildConfig> kFields = {
      {"workers", &HogwildConfig::workers, "Actor-learner threads, each stepping env.num_envs envs"},
  };
  return kFields;
}

HogwildPolicy::HogwildPolicy(const HogwildConfig& config, const envs::VectorEnvConfig& env_config,
                             algos::OnPolicyLearner& learner, torch::Device device, explore::Bonus* bonus)
    : device_(device), bonus_(bonus), seed_(env_config.seed) {
  config.validate();
  const int workers = config.workers;
  if (env_config.num_threads != 1 || env_config.batch_size != 0) {
    throw std::invalid_argument(
        "policy 'hogwild' gives each worker thread its own synchronous envs: set env.num_threads = 1 and "
        "env.batch_size = 0");
  }
  // Every update is one worker's: for it to see the batch the algorithm is configured for
  // (env.num_envs x T, as under every other policy), each worker steps env.num_envs envs, A3C's
  // per-thread settings. The run's W x num_envs envs are seeded as `single` seeds that many.
  envs::VectorEnvConfig run_envs = env_config;
  run_envs.num_envs = env_config.num_envs * workers;
  for (int w = 0; w < workers; ++w) {
    envs_.push_back(std::make_unique<envs::VectorEnv>(envs::env_slice(run_envs, w, workers)));
    replicas_.push_back(learner.make_shared_replica());
  }
}

void HogwildPolicy::train(TrainingState& state, int64_t total_steps, int64_t checkpoint_interval_steps,
                          const TrainingCallbacks& callbacks) {
  const int workers = static_cast<int>(replicas_.size());
  std::atomic<int64_t> steps_claimed{state.global_step};
  std::atomic<bool> stop{false};
  std::shared_mutex pause;  // shared: a replica updating; exclusive: a checkpoint
  std::mutex report;        // callbacks, episode statistics and `state`, one thread at a time
  std::exception_ptr failure;
  core::EpisodeStats episodes;
  UpdateReporter reporter(state, checkpoint_interval_steps);
  TrainingCallbacks pausing = callbacks;
  if (callbacks.on_checkpoint) {
    pausing.on_checkpoint = [&](const TrainingState& at) {
      std::unique_lock<std::shared_mutex> paused(pause);  // no replica mid-update
      callbacks.on_checkpoint(at);
    };
  }

  auto worker = [&](int w) {
    try {
      RolloutCollector collector(*envs_[static_cast<size_t>(w)], replicas_[static_cast<size_t>(w)]->rollout_length(),
                                 device_);
      algos::OnPolicyLearner& replica = *replicas_[static_cast<size_t>(w)];
      nn::ActorCritic model = replica.model();
      const auto on_episode = [&](double episode_return, int64_t episode_length) {
        std::lock_guard<std::mutex> lock(report);
        record_episode(episodes, callbacks, episode_return, episode_length);
      };
      while (!stop.load(std::memory_order_relaxed)) {
        const int64_t claimed = steps_claimed.fetch_add(collector.env_steps_per_rollout());
        if (claimed >= total_steps) break;
        const algos::Rollout& collected = collector.collect(model, on_episode);
        algos::Metrics bonus_metrics;
        const algos::Rollout rollout = bonus_ ? with_bonus(*bonus_, collected, bonus_metrics) : collected;
        const int64_t steps = claimed + collector.env_steps_per_rollout();
        const double progress = std::min(1.0, static_cast<double>(steps) / static_cast<double>(total_steps));
        algos::Metrics metrics;
        {
          std::shared_lock<std::shared_mutex> updating(pause);
          metrics = replica.update(rollout, progress);
        }

        std::lock_guard<std::mutex> lock(report);
        state.global_step = std::max(state.global_step, steps);
        ++state.updates;
        check_finite(metrics, state);
        metrics.insert(bonus_metrics.begin(), bonus_metrics.end());
        metrics["charts/worker"] = w;
        reporter.report(state, metrics, episodes, pausing);
        if (callbacks.should_stop && callbacks.should_stop()) stop = true;
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(report);
      if (!failure) failure = std::current_exception();
      stop = true;
    }
  };

  std::vector<std::thread> threads;
  // Each worker samples actions and minibatches from its own generator.
  for (int w = 0; w < workers; ++w) {
    threads.push_back(
        core::torch_thread(core::thread_seed(seed_, static_cast<uint64_t>(w)), [&worker, w] { worker(w); }));
  }
  for (std::thread& thread : threads) thread.join();
  if (failure) std::rethrow_exception(failure);
}

std::unique_ptr<Policy> make_hogwild_policy(const PolicyContext& context, const HogwildConfig& config) {
  return std::make_unique<HogwildPolicy>(config, context.env_config, context.on_policy_learner(), context.device,
                                         context.bonus);
}

}  // namespace concord::policies
