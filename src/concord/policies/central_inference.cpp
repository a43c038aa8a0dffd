#include "concord/policies/central_inference.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

#include <torch/torch.h>

#include "concord/core/config_problems.h"
#include "concord/core/rng.h"
#include "concord/core/timer.h"
#include "concord/core/torch_thread.h"
#include "concord/policies/central_inference_replay.h"
#include "concord/policies/runtime/actor_copy.h"
#include "concord/policies/runtime/batched_inference.h"
#include "concord/policies/runtime/collected_rollout.h"
#include "concord/policies/runtime/concat_envs.h"
#include "concord/policies/runtime/dynamic_adjustment.h"
#include "concord/policies/runtime/env_shares.h"
#include "concord/policies/runtime/exploration_bonus.h"
#include "concord/policies/runtime/metric_names.h"
#include "concord/policies/runtime/on_policy_update.h"
#include "concord/policies/runtime/rollout_collector.h"
#include "concord/policies/runtime/training_queue.h"
#include "concord/policies/runtime/workers.h"

namespace concord::policies {

// One call of train(): the agents, predictors and trainers, and what flows between them.
class CentralInferenceRun {
 public:
  CentralInferenceRun(CentralInferencePolicy& policy, TrainingState& state, int64_t total_steps,
                      int64_t checkpoint_interval_steps, const TrainingCallbacks& callbacks)
      : policy_(policy),
        config_(policy.config_),
        state_(state),
        total_steps_(total_steps),
        callbacks_(callbacks),
        actor_(policy.learner_),
        threads_({config_.agents, config_.predictors, config_.trainers}, config_.dynamic_adjustment,
                 config_.adjust_interval_seconds, core::derive_seed(policy.seed_, 0xADu)),
        steps_claimed_(state.global_step),
        agents_alive_(config_.agents),
        reporter_(state, checkpoint_interval_steps),
        workers_("central_inference", config_.wait_timeout_seconds, "policy.central_inference.wait_timeout_seconds"),
        inference_(workers_.make<runtime::BatchedInference>(actor_, config_.agents, policy.envs_.front()->num_envs(),
                                                            config_.prediction_batch, config_.queue_capacity,
                                                            policy.device_)),
        // Per-agent updates: max_policy_lag + 1 slots per agent; otherwise one pool of
        // training_batch x (max_policy_lag + 1).
        training_(workers_.make<runtime::TrainingQueue<runtime::CollectedRollout>>(
            config_.agents, config_.per_agent_updates(),
            (config_.per_agent_updates() ? 1 : int64_t{config_.segments_per_update()}) * (config_.max_policy_lag + 1),
            static_cast<size_t>(config_.segments_per_update()), "agent", "a trainer")) {
    // Per-agent updates: every agent collects as many segments as the run has updates left, so
    // that every update is whole, as under `single`.
    const int64_t per_update = policy.learner_.rollout_length() * policy.envs_.front()->num_envs() * config_.agents;
    segments_per_agent_ = (total_steps - state.global_step + per_update - 1) / per_update;
    workers_.on_stop([this] { threads_.close(); });
    actor_.publish(policy.learner_, state.updates);
  }

  // Every thread draws from its own generator (agents: their actions, which the predictors draw
  // with the asking agent's generator; trainers: minibatches). Agent 0 continues `generator`.
  void run(at::Generator generator) {
    uint64_t index = 0;
    for (int a = 0; a < config_.agents; ++a) {
      const std::string name = "agent " + std::to_string(a);
      const uint64_t seed = core::thread_seed(policy_.seed_, index++);
      if (a == 0) {
        workers_.start(name, generator, [this, a] { agent(a); });
      } else {
        workers_.start(name, seed, [this, a] { agent(a); });
      }
    }
    for (int p = 0; p < config_.predictors; ++p) {
      workers_.start("predictor " + std::to_string(p), core::thread_seed(policy_.seed_, index++), [this, p] {
        while (threads_.predictors.wait_until_active(p) && inference_.serve_batch()) {
        }
      });
    }
    for (int t = 0; t < config_.trainers; ++t) {
      workers_.start("trainer " + std::to_string(t), core::thread_seed(policy_.seed_, index++), [this, t] {
        training_.consume([this, t] { return threads_.trainers.wait_until_active(t); },
                          [this](std::vector<runtime::CollectedRollout>& segments) { train(segments); });
      });
    }
    // This thread polls should_stop and adjusts the thread counts until every thread has ended.
    while (!workers_.wait_for_end(std::chrono::milliseconds(20))) {
      if (!workers_.stopping() && callbacks_.should_stop) {
        std::lock_guard<std::mutex> lock(learner_mutex_);
        if (callbacks_.should_stop()) workers_.stop();
      }
      if (!workers_.stopping() && !finishing_) threads_.poll(updates_done_.load());
    }
    workers_.join();
  }

 private:
  void agent_exited() {
    if (agents_alive_.fetch_sub(1) == 1) {
      // No more requests or segments will come: predictors and trainers drain and exit.
      finishing_ = true;
      inference_.close();
      training_.close();
      threads_.predictors.close();
      threads_.trainers.close();
    }
  }

  // T steps as RolloutCollector takes them under `single`, each action asked for when it is
  // needed (the segment's first after its slot, with the newest parameters), so that one agent
  // taking turns with the learner draws and learns exactly what `single` does.
  void agent(int a) {
    struct Exit {
      CentralInferenceRun& run;
      ~Exit() { run.agent_exited(); }
    } exit{*this};
    const std::string name = "agent " + std::to_string(a);
    runtime::BatchedInference::Client& acting = inference_.client(a);
    runtime::RolloutCollector collector(*policy_.envs_[static_cast<size_t>(a)], policy_.learner_.rollout_length(),
                                        policy_.device_);
    for (int64_t collected = 0; threads_.agents.wait_until_active(a) && !workers_.stopping(); ++collected) {
      if (!training_.take_slot(a, name)) return;
      if (config_.per_agent_updates() && collected == segments_per_agent_) return;
      if (!config_.per_agent_updates() && steps_claimed_.fetch_add(collector.env_steps_per_rollout()) >= total_steps_) {
        // Agents waiting for a slot learn that the run is over (the trainers still train what is
        // queued); parked agents have nothing left to do either.
        training_.close_slots();
        threads_.agents.close();
        return;
      }
      acting.take_first_version();
      runtime::CollectedRollout segment =
          runtime::CollectedRollout::collect(collector, acting);  // [T, num_envs / agents]
      segment.version = acting.take_first_version();
      if (policy_.bonus_)
        segment.rollout = runtime::with_bonus(*policy_.bonus_, segment.rollout, segment.bonus_metrics);
      training_.push(a, std::move(segment));
    }
  }

  void train(const std::vector<runtime::CollectedRollout>& segments) {
    std::vector<const algos::Rollout*> parts;
    for (const runtime::CollectedRollout& segment : segments) parts.push_back(&segment.rollout);
    const algos::Rollout rollout = runtime::concat_envs(parts);
    std::lock_guard<std::mutex> lock(learner_mutex_);
    if (workers_.stopping()) return;
    double lag = 0.0;
    for (const runtime::CollectedRollout& segment : segments)
      lag += static_cast<double>(state_.updates - segment.version);
    state_.global_step += rollout.num_steps() * rollout.num_envs();
    // The bonus is the agents' (each segment's own).
    algos::Metrics metrics = runtime::run_on_policy_update(policy_.learner_, rollout, nullptr, state_, total_steps_);
    // The segments' slots free once train() returns, to start new ones with these parameters.
    actor_.publish(policy_.learner_, state_.updates);
    updates_done_ += 1;

    for (const runtime::CollectedRollout& segment : segments) segment.record_episodes(episodes_, callbacks_);
    for (const runtime::CollectedRollout& segment : segments) {
      for (const auto& [name, value] : segment.bonus_metrics) {
        metrics[name] += value / static_cast<double>(segments.size());
      }
    }
    const double seconds = std::max(reporter_.elapsed_seconds(), 1e-9);
    inference_.add_metrics(metrics, seconds);
    metrics[runtime::metric::kTrainingsPerSecond] = static_cast<double>(updates_done_.load()) / seconds;
    metrics[runtime::metric::kPolicyLag] = lag / static_cast<double>(segments.size());
    metrics[runtime::metric::kTrainingQueueLength] = static_cast<double>(training_.size());
    threads_.add_metrics(metrics);
    reporter_.report(state_, metrics, episodes_, callbacks_);
  }

  CentralInferencePolicy& policy_;
  const CentralInferenceConfig& config_;
  TrainingState& state_;
  const int64_t total_steps_;
  const TrainingCallbacks& callbacks_;

  runtime::ActorCopy actor_;  // the predictors' network
  runtime::AdjustedThreads threads_;
  int64_t segments_per_agent_ = 0;      // per-agent updates: what each agent collects in this run
  std::atomic<bool> finishing_{false};  // every agent is done; the rest drain
  std::atomic<int64_t> steps_claimed_;
  std::atomic<int> agents_alive_;
  std::atomic<int64_t> updates_done_{0};

  std::mutex learner_mutex_;  // learner updates, state_, episodes_ and every callback
  core::EpisodeStats episodes_;
  UpdateReporter reporter_;

  // Declared after everything its threads touch, so that they are joined first.
  runtime::Workers workers_;
  runtime::BatchedInference& inference_;
  runtime::TrainingQueue<runtime::CollectedRollout>& training_;
};

CentralInferencePolicy::CentralInferencePolicy(const CentralInferenceConfig& config,
                                               const envs::VectorEnvConfig& env_config, algos::OnPolicyLearner& learner,
                                               torch::Device device, explore::Bonus* bonus)
    : config_(core::validated(config)), seed_(env_config.seed), learner_(learner), device_(device), bonus_(bonus) {
  envs_ = runtime::thread_env_shares(env_config, config_.agents, "central_inference", "agent",
                                     "actors (policy.central_inference.actors)");
  runtime::require_lag_correction("central_inference", config_.max_policy_lag, learner, "trains segments");
}

void CentralInferencePolicy::train(TrainingState& state, int64_t total_steps, int64_t checkpoint_interval_steps,
                                   const TrainingCallbacks& callbacks) {
  if (state.global_step >= total_steps) return;
  // Agent 0 draws actions on from where the process generator stands (before the actor copy's
  // construction draws from it), as `single` does on the main thread.
  at::Generator action_generator = core::copy_of_process_generator();
  CentralInferenceRun run(*this, state, total_steps, checkpoint_interval_steps, callbacks);
  run.run(std::move(action_generator));
}

std::unique_ptr<Policy> make_central_inference_policy(const PolicyContext& context,
                                                      const CentralInferenceConfig& config) {
  return std::make_unique<CentralInferencePolicy>(config, context.env_config, context.on_policy_learner(),
                                                  context.device, context.bonus);
}

}  // namespace concord::policies
