#include "concord/policies/central_inference.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include "concord/core/active_threads.h"
#include "concord/core/config_problems.h"
#include "concord/core/rng.h"
#include "concord/core/timer.h"
#include "concord/core/torch_thread.h"
#include "concord/policies/actor_copy.h"
#include "concord/policies/central_inference_replay.h"
#include "concord/policies/concat_envs.h"
#include "concord/policies/dynamic_adjustment.h"
#include "concord/policies/exploration_bonus.h"
#include "concord/policies/on_policy_update.h"
#include "concord/policies/rollout_collector.h"
#include "concord/policies/runtime/batched_inference.h"
#include "concord/policies/runtime/channel.h"
#include "concord/policies/runtime/env_shares.h"
#include "concord/policies/runtime/slots.h"
#include "concord/policies/runtime/workers.h"

namespace concord::policies {

namespace {

// T steps of one agent's envs, and what the trainer reports when it trains them.
struct Segment {
  int agent = 0;
  algos::Rollout rollout;                            // [T, num_envs / agents]
  int64_t version = 0;                               // parameter version of its first action
  std::vector<std::pair<double, int64_t>> episodes;  // (return, length) of episodes that ended
  algos::Metrics bonus_metrics;                      // the exploration bonus's, if any
};

// One call of train(): the agents, predictors and trainers, and what flows between them.
class Run {
 public:
  Run(const CentralInferenceConfig& config, std::vector<std::unique_ptr<envs::VectorEnv>>& envs,
      algos::OnPolicyLearner& learner, torch::Device device, explore::Bonus* bonus, uint64_t seed, TrainingState& state,
      int64_t total_steps, int64_t checkpoint_interval_steps, const TrainingCallbacks& callbacks)
      : config_(config),
        envs_(envs),
        learner_(learner),
        device_(device),
        bonus_(bonus),
        seed_(seed),
        state_(state),
        total_steps_(total_steps),
        callbacks_(callbacks),
        actor_(learner),
        per_agent_(config.per_agent_updates()),
        agents_(config.agents, config.agents, "agents"),
        predictors_(config.predictors, config.predictors, "predictors"),
        trainers_(config.trainers, config.trainers, "trainers"),
        steps_claimed_(state.global_step),
        agents_alive_(config.agents),
        reporter_(state, checkpoint_interval_steps),
        workers_("central_inference", config.wait_timeout_seconds, "policy.central_inference.wait_timeout_seconds"),
        inference_(workers_.make<runtime::BatchedInference>(actor_, config.agents, envs.front()->num_envs(),
                                                            config.prediction_batch, config.queue_capacity, device)) {
    // Per-agent updates: every agent collects as many segments as the run has updates left, so
    // that every update is whole, as under `single`.
    const int64_t per_update = learner.rollout_length() * envs.front()->num_envs() * config.agents;
    segments_per_agent_ = (total_steps - state.global_step + per_update - 1) / per_update;
    // Slots per agent, or one pool of training_batch x (max_policy_lag + 1) for all.
    const int pools = per_agent_ ? config.agents : 1;
    const int64_t slots = per_agent_ ? config.max_policy_lag + 1
                                     : static_cast<int64_t>(config.segments_per_update()) * (config.max_policy_lag + 1);
    for (int i = 0; i < pools; ++i) {
      const std::string whose = per_agent_ ? "agent " + std::to_string(i) + "'s " : "";
      training_.push_back(&workers_.make<runtime::Channel<Segment>>(
          whose + "training queue", static_cast<size_t>(slots), "the agents", "a trainer"));
      slots_.push_back(&workers_.make<runtime::Slots>(whose + "training slots", slots));
    }
    workers_.on_stop([this] {
      agents_.close();
      predictors_.close();
      trainers_.close();
    });
    actor_.publish(learner_, state.updates);
  }

  // Every thread draws from its own generator (agents: their actions, which the predictors draw
  // with the asking agent's generator; trainers: minibatches). Agent 0 continues `generator`.
  void run(at::Generator generator) {
    uint64_t index = 0;
    for (int a = 0; a < config_.agents; ++a) {
      const std::string name = "agent " + std::to_string(a);
      const uint64_t seed = core::thread_seed(seed_, index++);
      if (a == 0) {
        workers_.start(name, generator, [this, a] { agent(a); });
      } else {
        workers_.start(name, seed, [this, a] { agent(a); });
      }
    }
    for (int p = 0; p < config_.predictors; ++p) {
      workers_.start("predictor " + std::to_string(p), core::thread_seed(seed_, index++), [this, p] {
        while (predictors_.wait_until_active(p) && inference_.serve_batch()) {
        }
      });
    }
    for (int t = 0; t < config_.trainers; ++t) {
      workers_.start("trainer " + std::to_string(t), core::thread_seed(seed_, index++),
                     [this, t] { per_agent_ ? trainer_per_agent() : trainer(t); });
    }
    supervise();
    workers_.join();
  }

 private:
  // The thread that called train(): polls should_stop and adjusts the thread counts until every
  // thread has ended.
  void supervise() {
    const auto interval = core::steady_duration(config_.adjust_interval_seconds);
    std::unique_ptr<DynamicAdjustment> adjustment;
    if (config_.dynamic_adjustment) {
      const ThreadCounts configured{config_.agents, config_.predictors, config_.trainers};
      adjustment = std::make_unique<DynamicAdjustment>(configured, configured, core::derive_seed(seed_, 0xADu));
    }
    auto interval_start = std::chrono::steady_clock::now();
    int64_t updates_at_interval_start = updates_done_.load();
    while (!workers_.wait_for_end(std::chrono::milliseconds(20))) {
      if (!workers_.stopping() && callbacks_.should_stop) {
        std::lock_guard<std::mutex> lock(learner_mutex_);
        if (callbacks_.should_stop()) workers_.stop();
      }
      const auto now = std::chrono::steady_clock::now();
      if (adjustment && !workers_.stopping() && !finishing_ && now - interval_start >= interval) {
        const int64_t updates = updates_done_.load();
        const double seconds = std::chrono::duration<double>(now - interval_start).count();
        const ThreadCounts next = adjustment->next(static_cast<double>(updates - updates_at_interval_start) / seconds);
        agents_.set_active(next.agents);
        predictors_.set_active(next.predictors);
        trainers_.set_active(next.trainers);
        adjustments_ = adjustment->decisions();
        interval_start = now;
        updates_at_interval_start = updates;
      }
    }
  }

  void agent_exited() {
    if (agents_alive_.fetch_sub(1) == 1) {
      // No more requests or segments will come: predictors and trainers drain and exit.
      finishing_ = true;
      inference_.close();
      for (auto* queue : training_) queue->close();
      predictors_.close();
      trainers_.close();
    }
  }

  // T steps as RolloutCollector takes them under `single`, each action asked for when it is
  // needed (the segment's first after its slot, with the newest parameters), so that one agent
  // taking turns with the learner draws and learns exactly what `single` does.
  void agent(int a) {
    struct Exit {
      Run& run;
      ~Exit() { run.agent_exited(); }
    } exit{*this};
    const std::string name = "agent " + std::to_string(a);
    runtime::BatchedInference::Client& acting = inference_.client(a);
    RolloutCollector collector(*envs_[static_cast<size_t>(a)], learner_.rollout_length(), device_);
    for (int64_t collected = 0; agents_.wait_until_active(a) && !workers_.stopping(); ++collected) {
      if (!slot_pool(a).take(name)) return;
      if (per_agent_ && collected == segments_per_agent_) return;
      if (!per_agent_ && steps_claimed_.fetch_add(collector.env_steps_per_rollout()) >= total_steps_) {
        // Agents waiting for a slot learn that the run is over (the trainers still train what is
        // queued); parked agents have nothing left to do either.
        for (auto* slots : slots_) slots->close();
        agents_.close();
        return;
      }
      Segment segment;
      segment.agent = a;
      acting.take_first_version();
      segment.rollout = collector
                            .collect(acting,
                                     [&](double episode_return, int64_t episode_length) {
                                       segment.episodes.emplace_back(episode_return, episode_length);
                                     })
                            .clone();
      segment.version = acting.take_first_version();
      if (bonus_) segment.rollout = with_bonus(*bonus_, segment.rollout, segment.bonus_metrics);
      training_queue(a).push(std::move(segment));
    }
  }

  // With per-agent updates each agent has its own slots and queue; otherwise all share one.
  runtime::Slots& slot_pool(int agent) { return *slots_[per_agent_ ? static_cast<size_t>(agent) : 0]; }
  runtime::Channel<Segment>& training_queue(int agent) {
    return *training_[per_agent_ ? static_cast<size_t>(agent) : 0];
  }

  void trainer(int t) {
    std::vector<Segment> batch;
    while (batch.empty() ? trainers_.wait_until_active(t) : true) {
      if (workers_.stopping()) return;
      Segment segment;
      const runtime::Popped popped = training_.front()->try_pop(segment);
      if (popped == runtime::Popped::kIdle) continue;  // an idle spare trainer is fine
      if (popped == runtime::Popped::kItem) {
        batch.push_back(std::move(segment));
        if (batch.size() < static_cast<size_t>(config_.segments_per_update())) continue;
      }
      // A full batch, or the run's last segments.
      if (!batch.empty()) train(batch);
      batch.clear();
      if (popped == runtime::Popped::kClosed) return;
    }
  }

  // Each update is the next segment of every agent, in agent order: what an update holds depends
  // on the seed and the lag, not on which agent ran ahead. Trainers take turns gathering and
  // training a round (updates are serial under the learner's lock anyway), so that rounds are
  // trained in the order they were gathered.
  void trainer_per_agent() {
    while (!workers_.stopping()) {
      std::vector<Segment> batch;
      bool closed = false;
      std::lock_guard<std::mutex> round(round_mutex_);
      for (auto* queue : training_) {
        Segment segment;
        runtime::Popped popped;
        while ((popped = queue->try_pop(segment)) == runtime::Popped::kIdle) {
          if (workers_.stopping()) return;  // the agent's own waits time out
        }
        if (popped == runtime::Popped::kItem) batch.push_back(std::move(segment));
        closed = closed || popped == runtime::Popped::kClosed;
      }
      // Once every agent has exited the queues are closed: the rounds then drain what is left.
      if (batch.empty() && closed) return;
      if (!batch.empty()) train(batch);
    }
  }

  void train(const std::vector<Segment>& segments) {
    std::vector<const algos::Rollout*> parts;
    for (const Segment& segment : segments) parts.push_back(&segment.rollout);
    const algos::Rollout rollout = concat_envs(parts);
    const int64_t steps = rollout.num_steps() * rollout.num_envs();
    std::lock_guard<std::mutex> lock(learner_mutex_);
    if (workers_.stopping()) return;
    double lag = 0.0;
    for (const Segment& segment : segments) lag += static_cast<double>(state_.updates - segment.version);
    state_.global_step += steps;
    // The bonus is the agents' (each segment's own).
    algos::Metrics metrics = run_on_policy_update(learner_, rollout, nullptr, state_, total_steps_);
    actor_.publish(learner_, state_.updates);
    updates_done_ += 1;
    // These segments are trained: their slots may start new ones, with the parameters just published.
    for (const Segment& segment : segments) slot_pool(segment.agent).give();

    for (const Segment& segment : segments) {
      for (const auto& [episode_return, episode_length] : segment.episodes) {
        record_episode(episodes_, callbacks_, episode_return, episode_length);
      }
    }
    for (const Segment& segment : segments) {
      for (const auto& [name, value] : segment.bonus_metrics) {
        metrics[name] += value / static_cast<double>(segments.size());
      }
    }
    const double seconds = std::max(reporter_.elapsed_seconds(), 1e-9);
    const auto predicted_rows = static_cast<double>(inference_.predicted_rows());
    metrics["charts/PPS"] = predicted_rows / seconds;
    metrics["charts/TPS"] = static_cast<double>(updates_done_.load()) / seconds;
    metrics["charts/policy_lag"] = lag / static_cast<double>(segments.size());
    metrics["charts/prediction_batch_size"] =
        predicted_rows / static_cast<double>(std::max<int64_t>(1, inference_.forward_passes()));
    metrics["charts/prediction_queue_length"] = static_cast<double>(inference_.queue_length());
    size_t queued = 0;
    for (const auto* queue : training_) queued += queue->size();
    metrics["charts/training_queue_length"] = static_cast<double>(queued);
    metrics["charts/active_agents"] = agents_.active();
    metrics["charts/active_predictors"] = predictors_.active();
    metrics["charts/active_trainers"] = trainers_.active();
    if (config_.dynamic_adjustment) metrics["charts/adjustments"] = static_cast<double>(adjustments_.load());
    reporter_.report(state_, metrics, episodes_, callbacks_);
  }

  const CentralInferenceConfig& config_;
  std::vector<std::unique_ptr<envs::VectorEnv>>& envs_;
  algos::OnPolicyLearner& learner_;
  torch::Device device_;
  explore::Bonus* bonus_;  // may be null
  uint64_t seed_;
  TrainingState& state_;
  const int64_t total_steps_;
  const TrainingCallbacks& callbacks_;

  ActorCopy actor_;                 // the predictors' network
  const bool per_agent_;            // config_.per_agent_updates()
  std::mutex round_mutex_;          // per_agent_: one trainer at a time gathers a round and trains it
  int64_t segments_per_agent_ = 0;  // per_agent_: what each agent collects in this run
  core::ActiveThreads agents_, predictors_, trainers_;

  std::atomic<bool> finishing_{false};  // every agent is done; the rest drain
  std::atomic<int64_t> steps_claimed_;
  std::atomic<int> agents_alive_;
  std::atomic<int64_t> updates_done_{0}, adjustments_{0};

  std::mutex learner_mutex_;  // learner updates, state_, episodes_ and every callback
  core::EpisodeStats episodes_;
  UpdateReporter reporter_;

  // Declared after everything its threads touch, so that they are joined first.
  runtime::Workers workers_;
  runtime::BatchedInference& inference_;
  // Finished segments, and the slots that bound how many are collected and not yet trained: per
  // agent (per_agent_), or one pool for every agent.
  std::vector<runtime::Channel<Segment>*> training_;
  std::vector<runtime::Slots*> slots_;
};

}  // namespace

CentralInferencePolicy::CentralInferencePolicy(const CentralInferenceConfig& config,
                                               const envs::VectorEnvConfig& env_config, algos::OnPolicyLearner& learner,
                                               torch::Device device, explore::Bonus* bonus)
    : config_(core::validated(config)), seed_(env_config.seed), learner_(learner), device_(device), bonus_(bonus) {
  if (env_config.batch_size != 0 || env_config.num_threads != 1) {
    throw std::invalid_argument(
        "policy 'central_inference' gives each agent thread its own synchronous envs: set env.batch_size = 0 and "
        "env.num_threads = 1 (got " +
        std::to_string(env_config.batch_size) + " and " + std::to_string(env_config.num_threads) + ")");
  }
  if (config_.max_policy_lag > 0 && !learner.corrects_policy_lag()) {
    throw std::invalid_argument(
        "policy 'central_inference' trains segments up to max_policy_lag = " + std::to_string(config_.max_policy_lag) +
        " updates old, which this algorithm does not correct (A2C: set algo.a2c.vtrace = true; "
        "or set policy.central_inference.max_policy_lag = 0)");
  }
  for (int a = 0; a < config_.agents; ++a) {
    envs_.push_back(std::make_unique<envs::VectorEnv>(
        runtime::env_share(env_config, a, config_.agents, "central_inference", "agents")));
  }
}

void CentralInferencePolicy::train(TrainingState& state, int64_t total_steps, int64_t checkpoint_interval_steps,
                                   const TrainingCallbacks& callbacks) {
  if (state.global_step >= total_steps) return;
  // Predictor 0 draws actions on from where the process generator stands (before the actor copy's
  // construction draws from it), as `single` does on the main thread.
  at::Generator action_generator;
  {
    at::Generator process = at::detail::getDefaultCPUGenerator();  // a handle on the one generator
    std::lock_guard<std::mutex> lock(process.mutex());
    action_generator = process.clone();
  }
  Run run(config_, envs_, learner_, device_, bonus_, seed_, state, total_steps, checkpoint_interval_steps, callbacks);
  run.run(std::move(action_generator));
}

std::unique_ptr<Policy> make_central_inference_policy(const PolicyContext& context,
                                                      const CentralInferenceConfig& config) {
  if (auto* off_policy = dynamic_cast<algos::OffPolicyLearner*>(&context.learner)) {
    return std::make_unique<CentralInferenceReplayPolicy>(config, context.env_config, *off_policy, context.device,
                                                          context.bonus);
  }
  return std::make_unique<CentralInferencePolicy>(config, context.env_config, context.on_policy_learner(),
                                                  context.device, context.bonus);
}

}  // namespace concord::policies
