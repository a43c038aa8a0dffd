#include "concord/policies/central_inference.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include <ATen/CPUGeneratorImpl.h>
#include <c10/core/InferenceMode.h>
#include <torch/torch.h>

#include "concord/core/active_threads.h"
#include "concord/core/bounded_queue.h"
#include "concord/core/config_problems.h"
#include "concord/core/first_failure.h"
#include "concord/core/rng.h"
#include "concord/core/timer.h"
#include "concord/core/torch_thread.h"
#include "concord/policies/actor_copy.h"
#include "concord/policies/dynamic_adjustment.h"
#include "concord/policies/env_actions.h"
#include "concord/policies/exploration_bonus.h"
#include "concord/policies/observation_rows.h"

namespace concord::policies {

void CentralInferenceConfig::validate() const {
  core::ConfigProblems problems;
  problems.check(agents >= 1, "agents", agents, ">= 1");
  problems.check(predictors >= 1, "predictors", predictors, ">= 1");
  problems.check(trainers >= 1, "trainers", trainers, ">= 1");
  problems.check(prediction_batch >= 1, "prediction_batch", prediction_batch, ">= 1");
  problems.check(training_batch >= 0, "training_batch", training_batch, ">= 0 (0: one segment per agent)");
  problems.check(queue_capacity >= 1, "queue_capacity", queue_capacity, ">= 1");
  problems.check(wait_timeout_seconds > 0.0, "wait_timeout_seconds", wait_timeout_seconds, "> 0");
  problems.check(adjust_interval_seconds > 0.0, "adjust_interval_seconds", adjust_interval_seconds, "> 0");
  problems.check(max_policy_lag >= 0, "max_policy_lag", max_policy_lag, ">= 0");
  // Each trainer may hold training_batch - 1 segments while it waits for its batch to fill; with
  // fewer slots than that in all, every agent would wait for a slot that never comes. (Per-agent
  // updates are gathered by one trainer at a time.)
  const int64_t batch = segments_per_update();
  if (!per_agent_updates() && max_policy_lag >= 0 && batch >= 1 && trainers >= 1 &&
      batch * (max_policy_lag + 1) <= static_cast<int64_t>(trainers) * (batch - 1)) {
    problems.add("max_policy_lag=" + std::to_string(max_policy_lag) + " leaves " +
                 std::to_string(batch * (max_policy_lag + 1)) + " segments in flight, too few for " +
                 std::to_string(trainers) + " trainers to fill batches of " + std::to_string(batch) +
                 " (raise max_policy_lag or lower trainers)");
  }
  problems.throw_if_any("policy.central_inference config");
}

const core::ConfigFields<CentralInferenceConfig>& CentralInferenceConfig::fields() {
  using C = CentralInferenceConfig;
  static const core::ConfigFields<C> kFields = {
      {"agents", &C::agents, "Agent threads, each stepping its own envs (env.num_envs is split among them)"},
      {"predictors", &C::predictors, "Predictor threads running batched inference"},
      {"trainers", &C::trainers, "Trainer threads feeding the learner"},
      {"prediction_batch", &C::prediction_batch, "Most observations in one batched forward pass"},
      {"training_batch", &C::training_batch,
       "Agent segments (T steps of num_envs / agents envs) per learner update; 0: one per agent, so an update sees "
       "env.num_envs x T steps as under single"},
      {"queue_capacity", &C::queue_capacity, "Capacity of the prediction queue"},
      {"max_policy_lag", &C::max_policy_lag,
       "Updates a segment may lag the learner: at most training_batch x (max_policy_lag + 1) segments are collected "
       "and not yet trained (0: collection and learning take turns, on-policy; above 0 only for an algorithm that "
       "corrects a lag: PPO, A2C with V-trace)"},
      {"wait_timeout_seconds", &C::wait_timeout_seconds,
       "A blocking wait longer than this while the run is live is an error naming the queue"},
      {"dynamic_adjustment", &C::dynamic_adjustment,
       "GA3C's random walk over the numbers of agents, predictors and trainers, kept when TPS rises"},
      {"adjust_interval_seconds", &C::adjust_interval_seconds,
       "How long each thread configuration is measured by the dynamic adjustment"},
  };
  return kFields;
}

namespace {

using core::ActiveThreads;
using core::BoundedQueue;
using core::QueueStatus;
using SteadyClock = std::chrono::steady_clock;

// Thrown inside a thread when the run is shutting down under it; the thread just exits.
struct RunStopped {};

// One agent's request: actions (with their log-probabilities and values) for its envs'
// observations, or, with values_only, just V of each row: a segment's bootstrap V(o_T), or the
// final observations of episodes truncated at its last step.
struct PredictionRequest {
  int agent = 0;
  torch::Tensor observations;  // [rows, *obs_shape] in the env's dtype, on the CPU
  bool values_only = false;
  at::Generator generator;  // the agent's: its actions are drawn from it, whatever the batch
};

// The predictor's answer, row for row, on the CPU (values only: actions and log_probs undefined).
struct Prediction {
  torch::Tensor actions;    // int64 [rows] or float [rows, d]
  torch::Tensor log_probs;  // [rows]
  torch::Tensor values;     // [rows]
  int64_t version = 0;      // parameter version that predicted them
};

// T steps of one agent's envs, and what the trainer reports when it trains them.
struct Segment {
  int agent = 0;
  algos::Rollout rollout;                            // [T, num_envs / agents], on the CPU
  int64_t version = 0;                               // parameter version of its first action
  std::vector<std::pair<double, int64_t>> episodes;  // (return, length) of episodes that ended
  algos::Metrics bonus_metrics;                      // the exploration bonus's, if any
};

// Segments side by side along B: one Rollout [T, sum of B].
algos::Rollout concat_along_envs(const std::vector<Segment>& segments) {
  algos::Rollout rollout;
  const auto fields = rollout.fields();
  for (size_t field = 0; field < algos::Rollout::kFields; ++field) {
    std::vector<torch::Tensor> parts;
    parts.reserve(segments.size());
    for (const Segment& segment : segments) parts.push_back(*segment.rollout.fields()[field]);
    *fields[field] = torch::cat(parts, algos::Rollout::env_dim(field));
  }
  return rollout;
}

// Segments that may be collected and not yet trained at once (see the header on the policy lag).
int64_t segments_in_flight(const CentralInferenceConfig& config) {
  return static_cast<int64_t>(config.segments_per_update()) * (config.max_policy_lag + 1);
}

// Rows [offset, offset + count) of a batched forward pass.
nn::PolicyOutput rows_of(const nn::PolicyOutput& out, int64_t offset, int64_t count) {
  nn::PolicyOutput rows;
  if (out.logits.defined()) rows.logits = out.logits.narrow(0, offset, count);
  if (out.mean.defined()) rows.mean = out.mean.narrow(0, offset, count);
  rows.log_std = out.log_std;
  rows.value = out.value.narrow(0, offset, count);
  return rows;
}

// One call of train(): the queues, the threads and their shared counters, wired in one place.
class Run {
 public:
  Run(const CentralInferenceConfig& config, std::vector<std::unique_ptr<envs::VectorEnv>>& envs,
      algos::OnPolicyLearner& learner, torch::Device device, explore::Bonus* bonus, uint64_t seed,
      at::Generator action_generator, TrainingState& state, int64_t total_steps, int64_t checkpoint_interval_steps,
      const TrainingCallbacks& callbacks)
      : config_(config),
        envs_(envs),
        learner_(learner),
        device_(device),
        bonus_(bonus),
        seed_(seed),
        action_generator_(std::move(action_generator)),
        state_(state),
        total_steps_(total_steps),
        callbacks_(callbacks),
        timeout_(std::chrono::duration_cast<SteadyClock::duration>(
            std::chrono::duration<double>(config.wait_timeout_seconds))),
        actor_(learner),
        predictions_(static_cast<size_t>(config.queue_capacity), "prediction queue"),
        per_agent_(config.per_agent_updates()),
        agents_(config.agents, config.agents, "agents"),
        predictors_(config.predictors, config.predictors, "predictors"),
        trainers_(config.trainers, config.trainers, "trainers"),
        steps_claimed_(state.global_step),
        agents_alive_(config.agents),
        reporter_(state, checkpoint_interval_steps) {
    for (int a = 0; a < config.agents; ++a) {
      replies_.push_back(std::make_unique<BoundedQueue<Prediction>>(1, "agent " + std::to_string(a) + " reply"));
    }
    // Per-agent updates: every agent collects as many segments as the run has updates left, so
    // that every update is whole, as under `single`.
    const int64_t per_update = learner.rollout_length() * envs.front()->num_envs() * config.agents;
    segments_per_agent_ = (total_steps - state.global_step + per_update - 1) / per_update;
    // Slots per agent, or one pool of training_batch x (max_policy_lag + 1) for all.
    const int pools = per_agent_ ? config.agents : 1;
    const int64_t slots = per_agent_ ? config.max_policy_lag + 1 : segments_in_flight(config);
    for (int i = 0; i < pools; ++i) {
      const std::string whose = per_agent_ ? "agent " + std::to_string(i) + "'s " : "";
      training_.push_back(
          std::make_unique<BoundedQueue<Segment>>(static_cast<size_t>(slots), whose + "training queue"));
      slots_.push_back(std::make_unique<BoundedQueue<char>>(static_cast<size_t>(slots), whose + "training slots"));
      for (int64_t k = 0; k < slots; ++k) slots_.back()->push(0, timeout_);
    }
    actor_.publish(learner_, state.updates);
  }

  void run() {
    const int total_threads = config_.agents + config_.predictors + config_.trainers;
    std::vector<std::thread> threads;
    threads.reserve(static_cast<size_t>(total_threads));
    // Every thread draws from its own generator (agents: their actions, which the predictors draw
    // with the asking agent's generator; trainers: minibatches). Agent 0 continues the process
    // generator, as `single` does on the main thread.
    uint64_t index = 0;
    for (int a = 0; a < config_.agents; ++a) {
      const auto body = [this, a] { guarded([&] { agent(a); }); };
      const uint64_t seed = core::thread_seed(seed_, index++);
      threads.push_back(a == 0 ? core::torch_thread(action_generator_, body) : core::torch_thread(seed, body));
    }
    for (int p = 0; p < config_.predictors; ++p) {
      threads.push_back(
          core::torch_thread(core::thread_seed(seed_, index++), [this, p] { guarded([&] { predictor(p); }); }));
    }
    for (int t = 0; t < config_.trainers; ++t) {
      threads.push_back(
          core::torch_thread(core::thread_seed(seed_, index++), [this, t] { guarded([&] { trainer(t); }); }));
    }
    supervise(total_threads);
    for (std::thread& thread : threads) thread.join();
    failure_.rethrow_if_any();
  }

 private:
  // Runs a thread's body; records the first exception of any thread and stops the run.
  template <typename Body>
  void guarded(Body&& body) {
    try {
      body();
    } catch (const RunStopped&) {
    } catch (...) {
      failure_.record(std::current_exception());
      abort();
    }
    {
      std::lock_guard<std::mutex> lock(exited_mutex_);
      ++exited_;
    }
    exited_changed_.notify_all();
  }

  // Stops everything now: queues close, parked threads are released, waiters wake up.
  void abort() {
    stopping_ = true;
    predictions_.close();
    for (auto& queue : training_) queue->close();
    for (auto& slots : slots_) slots->close();
    for (auto& replies : replies_) replies->close();
    agents_.close();
    predictors_.close();
    trainers_.close();
  }

  // The thread that called train(): polls should_stop, adjusts thread counts, waits for the end.
  void supervise(int total_threads) {
    const auto interval = std::chrono::duration_cast<SteadyClock::duration>(
        std::chrono::duration<double>(config_.adjust_interval_seconds));
    std::unique_ptr<DynamicAdjustment> adjustment;
    if (config_.dynamic_adjustment) {
      const ThreadCounts configured{config_.agents, config_.predictors, config_.trainers};
      adjustment = std::make_unique<DynamicAdjustment>(configured, configured, core::derive_seed(seed_, 0xADu));
    }
    auto interval_start = SteadyClock::now();
    int64_t updates_at_interval_start = updates_done_.load();
    while (true) {
      {
        std::unique_lock<std::mutex> lock(exited_mutex_);
        if (exited_changed_.wait_for(lock, std::chrono::milliseconds(20), [&] { return exited_ == total_threads; })) {
          return;
        }
      }
      if (!stopping_ && callbacks_.should_stop) {
        std::lock_guard<std::mutex> lock(learner_mutex_);
        if (callbacks_.should_stop()) abort();
      }
      const auto now = SteadyClock::now();
      if (adjustment && !stopping_ && !finishing_ && now - interval_start >= interval) {
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

  // Sends observations to the predictors and waits for the answer.
  Prediction predict(int agent, torch::Tensor observations, bool values_only = false) {
    PredictionRequest request{agent, std::move(observations), values_only, *core::thread_generator(torch::kCPU)};
    switch (predictions_.push(std::move(request), timeout_)) {
      case QueueStatus::kOk:
        break;
      case QueueStatus::kClosed:
        throw RunStopped{};
      case QueueStatus::kTimedOut:
        throw_timeout("agent " + std::to_string(agent), predictions_.name(), "to make room");
    }
    Prediction prediction;
    switch (replies_[static_cast<size_t>(agent)]->pop(prediction, timeout_)) {
      case QueueStatus::kOk:
        return prediction;
      case QueueStatus::kClosed:
        throw RunStopped{};
      case QueueStatus::kTimedOut:
        break;
    }
    throw_timeout("agent " + std::to_string(agent), predictions_.name(), "to answer");
  }

  [[noreturn]] void throw_timeout(const std::string& who, const std::string& queue, const std::string& what) {
    if (stopping_) throw RunStopped{};
    throw std::runtime_error("policy 'central_inference': " + who + " waited " +
                             std::to_string(config_.wait_timeout_seconds) + " s for the " + queue + " " + what +
                             " (raise policy.central_inference.wait_timeout_seconds if the machine is just slow)");
  }

  void agent_exited() {
    if (agents_alive_.fetch_sub(1) == 1) {
      // No more requests or segments will come: predictors and trainers drain and exit.
      finishing_ = true;
      predictions_.close();
      for (auto& queue : training_) queue->close();
      predictors_.close();
      trainers_.close();
    }
  }

  void agent(int a) {
    struct Exit {
      Run& run;
      ~Exit() { run.agent_exited(); }
    } exit{*this};
    envs::VectorEnv& env = *envs_[static_cast<size_t>(a)];
    const int64_t n = env.num_envs();
    const int64_t steps = learner_.rollout_length();
    const envs::Space& action_space = env.spec().action_space;
    const bool discrete = action_space.is_discrete();
    const EnvActions env_actions(action_space, torch::kCPU);
    const auto host_rows = [&](const void* rows, int64_t count) { return observation_view(env, rows, count).clone(); };

    envs::Batch batch = env.reset();
    torch::Tensor observations = host_rows(batch.observations, n);
    for (int64_t collected = 0; agents_.wait_until_active(a) && !stopping_; ++collected) {
      if (!take_slot(a)) return;
      if (per_agent_ && collected == segments_per_agent_) return;
      if (!per_agent_ && steps_claimed_.fetch_add(steps * n) >= total_steps_) {
        // Agents waiting for a slot learn that the run is over (the trainers still train what is
        // queued); parked agents have nothing left to do either.
        for (auto& slots : slots_) slots->close();
        agents_.close();
        return;
      }
      // T steps as RolloutCollector takes them under `single`, each prediction asked for when it
      // is needed (the segment's first action after the slot, with the newest parameters), so
      // that one agent taking turns with the learner draws and learns exactly what `single` does.
      Segment segment;
      segment.agent = a;
      algos::Rollout& rollout = segment.rollout;
      const auto floats = torch::TensorOptions().dtype(torch::kFloat32);
      rollout.observations = torch::empty(observation_batch_shape(env.spec().observation_space, {steps, n}),
                                          floats.dtype(observations.scalar_type()));
      rollout.actions = discrete ? torch::empty({steps, n}, floats.dtype(torch::kInt64))
                                 : torch::empty({steps, n, env.act_dim()}, floats);
      rollout.log_probs = torch::empty({steps, n}, floats);
      rollout.values = torch::empty({steps, n}, floats);
      rollout.rewards = torch::empty({steps, n}, floats);
      rollout.terminated = torch::empty({steps, n}, floats);
      rollout.truncated = torch::empty({steps, n}, floats);
      rollout.final_observations = torch::zeros_like(rollout.observations);
      float* rewards = rollout.rewards.data_ptr<float>();
      float* terminated = rollout.terminated.data_ptr<float>();
      float* truncated = rollout.truncated.data_ptr<float>();

      for (int64_t t = 0; t < steps; ++t) {
        const Prediction prediction = predict(a, observations);
        if (t == 0) segment.version = prediction.version;
        rollout.observations[t].copy_(observations);
        rollout.actions[t].copy_(prediction.actions);
        rollout.log_probs[t].copy_(prediction.log_probs);
        rollout.values[t].copy_(prediction.values);

        batch = env_actions.step(env, prediction.actions);
        bool any_truncated = false;
        for (int64_t row = 0; row < n; ++row) {
          rewards[t * n + row] = batch.rewards[row];
          terminated[t * n + row] = batch.terminated[row];
          truncated[t * n + row] = batch.truncated[row];
          any_truncated = any_truncated || batch.truncated[row];
          if (batch.has_final[row])
            segment.episodes.emplace_back(batch.episode_returns[row], batch.episode_lengths[row]);
        }
        // A time-limited episode bootstraps from its own last observation, not the next episode's
        // first; the learner evaluates it.
        if (any_truncated) {
          const torch::Tensor mask = rollout.truncated[t].to(torch::kBool);
          rollout.final_observations[t].index_put_({mask}, host_rows(batch.final_observations, n).index({mask}));
        }
        observations = host_rows(batch.observations, n);
      }
      rollout.next_observations = observations;
      rollout.bootstrap_value = predict(a, observations, /*values_only=*/true).values;
      if (bonus_) rollout = with_bonus(*bonus_, rollout, segment.bonus_metrics);
      BoundedQueue<Segment>& queue = training_queue(a);
      switch (queue.push(std::move(segment), timeout_)) {
        case QueueStatus::kOk:
          break;
        case QueueStatus::kClosed:
          throw RunStopped{};
        case QueueStatus::kTimedOut:
          throw_timeout("agent " + std::to_string(a), queue.name(), "to make room");
      }
    }
  }

  // Waits for one of the slots that bound the policy lag; false when the run is stopping.
  bool take_slot(int a) {
    BoundedQueue<char>& slots = slot_pool(a);
    char slot = 0;
    switch (slots.pop(slot, timeout_)) {
      case QueueStatus::kOk:
        return !stopping_;
      case QueueStatus::kClosed:
        return false;
      case QueueStatus::kTimedOut:
        break;
    }
    throw_timeout("agent " + std::to_string(a), slots.name(), "to free up");
  }

  // With per-agent updates each agent has its own slots and queue; otherwise all share one.
  BoundedQueue<char>& slot_pool(int agent) { return *slots_[per_agent_ ? static_cast<size_t>(agent) : 0]; }
  BoundedQueue<Segment>& training_queue(int agent) { return *training_[per_agent_ ? static_cast<size_t>(agent) : 0]; }

  void predictor(int p) {
    // Requests are batched whole: as many agents as fit in prediction_batch observations.
    const int64_t envs_per_agent = envs_.front()->num_envs();
    const size_t max_requests = static_cast<size_t>(std::max<int64_t>(1, config_.prediction_batch / envs_per_agent));
    std::vector<PredictionRequest> requests;
    std::vector<torch::Tensor> act_rows, value_rows;
    while (predictors_.wait_until_active(p)) {
      requests.clear();
      const QueueStatus status = predictions_.pop_batch(requests, max_requests, timeout_);
      if (status == QueueStatus::kClosed) return;
      if (status == QueueStatus::kTimedOut) continue;  // an idle spare predictor is fine
      // One forward pass for the requests that need actions, one for those that need values.
      act_rows.clear();
      value_rows.clear();
      for (const PredictionRequest& request : requests) {
        (request.values_only ? value_rows : act_rows).push_back(request.observations);
      }
      // The actions are drawn per request, with the asking agent's generator, so that what an
      // agent draws does not depend on which other requests shared its forward pass.
      std::vector<Prediction> answers(requests.size());
      int64_t act_offset = 0, value_offset = 0;
      actor_.read([&](nn::ActorCritic& model, int64_t version) {
        c10::InferenceMode inference;
        nn::PolicyOutput acted;
        torch::Tensor values;
        if (!act_rows.empty()) acted = model->forward(torch::cat(act_rows).to(device_));
        if (!value_rows.empty()) values = model->value(torch::cat(value_rows).to(device_)).to(torch::kCPU);
        for (size_t i = 0; i < requests.size(); ++i) {
          const PredictionRequest& request = requests[i];
          const int64_t count = request.observations.size(0);
          if (request.values_only) {
            answers[i] = Prediction{{}, {}, values.narrow(0, value_offset, count), version};
            value_offset += count;
            continue;
          }
          const nn::PolicyOutput rows = rows_of(acted, act_offset, count);
          act_offset += count;
          const core::ScopedThreadGenerator agent_generator(request.generator);
          const nn::ActionDistribution distribution = model->distribution(rows);
          const torch::Tensor actions = distribution.sample();
          answers[i] = Prediction{actions.to(torch::kCPU), distribution.log_prob(actions).to(torch::kCPU),
                                  rows.value.to(torch::kCPU), version};
        }
      });
      for (size_t i = 0; i < requests.size(); ++i) {
        const PredictionRequest& request = requests[i];
        Prediction mine = std::move(answers[i]);
        // Each agent has one request in flight, so its reply slot is free.
        if (replies_[static_cast<size_t>(request.agent)]->push(std::move(mine), timeout_) == QueueStatus::kClosed) {
          throw RunStopped{};
        }
      }
      predicted_rows_ += act_offset + value_offset;
      forward_passes_ += 1;
    }
  }

  void trainer(int t) {
    if (per_agent_) return trainer_per_agent();
    std::vector<Segment> batch;
    while (batch.empty() ? trainers_.wait_until_active(t) : true) {
      if (stopping_) return;
      Segment segment;
      const QueueStatus status = training_.front()->pop(segment, timeout_);
      if (status == QueueStatus::kTimedOut) continue;  // an idle spare trainer is fine
      if (status == QueueStatus::kOk) {
        batch.push_back(std::move(segment));
        if (batch.size() < static_cast<size_t>(config_.segments_per_update())) continue;
      }
      // A full batch, or the run's last segments.
      if (!batch.empty()) train(batch);
      batch.clear();
      if (status == QueueStatus::kClosed) return;
    }
  }

  // Each update is the next segment of every agent, in agent order: what an update holds depends
  // on the seed and the lag, not on which agent ran ahead. Trainers take turns gathering and
  // training a round (updates are serial under the learner's lock anyway), so that rounds are
  // trained in the order they were gathered: a second trainer's round could otherwise take the
  // learner's lock first.
  void trainer_per_agent() {
    while (!stopping_) {
      std::vector<Segment> batch;
      bool closed = false;
      std::lock_guard<std::mutex> round(round_mutex_);
      for (auto& queue : training_) {
        Segment segment;
        QueueStatus status;
        while ((status = queue->pop(segment, timeout_)) == QueueStatus::kTimedOut) {
          if (stopping_) return;  // the agent still collects, or waits for a prediction: its own waits time out
        }
        if (status == QueueStatus::kOk) batch.push_back(std::move(segment));
        closed = closed || status == QueueStatus::kClosed;
      }
      // Once every agent has exited the queues are closed: the rounds then drain what is left.
      if (batch.empty() && closed) return;
      if (!batch.empty()) train(batch);
    }
  }

  void train(const std::vector<Segment>& segments) {
    const algos::Rollout rollout = concat_along_envs(segments);
    const int64_t steps = rollout.num_steps() * rollout.num_envs();
    std::lock_guard<std::mutex> lock(learner_mutex_);
    if (stopping_) return;
    double lag = 0.0;
    for (const Segment& segment : segments) lag += static_cast<double>(state_.updates - segment.version);
    const double progress =
        std::min(1.0, static_cast<double>(state_.global_step + steps) / static_cast<double>(total_steps_));
    algos::Metrics metrics = learner_.update(rollout, progress);
    state_.global_step += steps;
    ++state_.updates;
    actor_.publish(learner_, state_.updates);
    updates_done_ += 1;
    // These segments are trained: their slots may start new ones, with the parameters just published
    // (a closed pool means the run is over).
    for (const Segment& segment : segments) slot_pool(segment.agent).push(0, timeout_);

    for (const Segment& segment : segments) {
      for (const auto& [episode_return, episode_length] : segment.episodes) {
        record_episode(episodes_, callbacks_, episode_return, episode_length);
      }
    }
    check_finite(metrics, state_);
    for (const Segment& segment : segments) {
      for (const auto& [name, value] : segment.bonus_metrics) {
        metrics[name] += value / static_cast<double>(segments.size());
      }
    }
    const double seconds = std::max(reporter_.elapsed_seconds(), 1e-9);
    metrics["charts/PPS"] = static_cast<double>(predicted_rows_.load()) / seconds;
    metrics["charts/TPS"] = static_cast<double>(updates_done_.load()) / seconds;
    metrics["charts/policy_lag"] = lag / static_cast<double>(segments.size());
    metrics["charts/prediction_batch_size"] =
        static_cast<double>(predicted_rows_.load()) / static_cast<double>(std::max<int64_t>(1, forward_passes_.load()));
    metrics["charts/prediction_queue_length"] = static_cast<double>(predictions_.size());
    size_t queued = 0;
    for (const auto& queue : training_) queued += queue->size();
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
  at::Generator action_generator_;  // agent 0's
  TrainingState& state_;
  const int64_t total_steps_;
  const TrainingCallbacks& callbacks_;
  const SteadyClock::duration timeout_;

  ActorCopy actor_;  // the predictors' network
  BoundedQueue<PredictionRequest> predictions_;
  const bool per_agent_;  // config_.per_agent_updates()
  // Finished segments, and one token per segment that may be collected before it is trained: per
  // agent (per_agent_), or one pool for every agent.
  std::vector<std::unique_ptr<BoundedQueue<Segment>>> training_;
  std::vector<std::unique_ptr<BoundedQueue<char>>> slots_;
  std::mutex round_mutex_;          // per_agent_: one trainer at a time gathers a round and trains it
  int64_t segments_per_agent_ = 0;  // per_agent_: what each agent collects in this run
  std::vector<std::unique_ptr<BoundedQueue<Prediction>>> replies_;  // one slot per agent
  ActiveThreads agents_, predictors_, trainers_;

  std::atomic<bool> stopping_{false};   // aborting: should_stop, or a thread failed
  std::atomic<bool> finishing_{false};  // every agent is done; the rest drain
  std::atomic<int64_t> steps_claimed_;
  std::atomic<int> agents_alive_;
  std::atomic<int64_t> predicted_rows_{0}, forward_passes_{0}, updates_done_{0}, adjustments_{0};

  std::mutex learner_mutex_;  // learner updates, state_, episodes_ and every callback
  core::EpisodeStats episodes_;
  UpdateReporter reporter_;

  core::FirstFailure failure_;
  std::mutex exited_mutex_;
  std::condition_variable exited_changed_;
  int exited_ = 0;
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
  if (env_config.num_envs % config_.agents != 0) {
    throw std::invalid_argument("policy 'central_inference': env.num_envs = " + std::to_string(env_config.num_envs) +
                                " must be divisible by its " + std::to_string(config_.agents) + " agents");
  }
  for (int a = 0; a < config_.agents; ++a) {
    envs_.push_back(std::make_unique<envs::VectorEnv>(envs::env_slice(env_config, a, config_.agents)));
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
  Run run(config_, envs_, learner_, device_, bonus_, seed_, std::move(action_generator), state, total_steps,
          checkpoint_interval_steps, callbacks);
  run.run();
}

std::unique_ptr<Policy> make_central_inference_policy(const PolicyContext& context,
                                                      const CentralInferenceConfig& config) {
  return std::make_unique<CentralInferencePolicy>(config, context.env_config, context.on_policy_learner(),
                                                  context.device, context.bonus);
}

}  // namespace concord::policies
