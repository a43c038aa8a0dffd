#include "concord/policies/central_inference.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

#include <torch/torch.h>

#include "concord/algos/off_policy_learner.h"
#include "concord/algos/on_policy_learner.h"
#include "concord/core/config_problems.h"
#include "concord/core/rng.h"
#include "concord/core/timer.h"
#include "concord/core/torch_thread.h"
#include "concord/policies/runtime/actor_copy.h"
#include "concord/policies/runtime/actor_threads.h"
#include "concord/policies/runtime/batched_inference.h"
#include "concord/policies/runtime/collected_rollout.h"
#include "concord/policies/runtime/concat_envs.h"
#include "concord/policies/runtime/dynamic_adjustment.h"
#include "concord/policies/runtime/env_shares.h"
#include "concord/policies/runtime/exploration_bonus.h"
#include "concord/policies/runtime/learner_drive.h"
#include "concord/policies/runtime/metric_names.h"
#include "concord/policies/runtime/on_policy_update.h"
#include "concord/policies/runtime/replay_feed.h"
#include "concord/policies/runtime/rollout_collector.h"
#include "concord/policies/runtime/training_queue.h"
#include "concord/policies/runtime/workers.h"

namespace concord::policies {

// Where the agents' experience goes and who learns from it: the one part of the policy that
// differs between the families. train() runs the learner while `start` runs the agents and
// predictors, the same for both, on the run's threads.
class CentralInferencePolicy::Destination {
 public:
  // One train() call, as the agents and predictors see it.
  class Run {
   public:
    virtual ~Run() = default;
    // The network the predictors answer with.
    virtual std::unique_ptr<runtime::PredictorNetwork> network() = 0;
    // Whether predictor p may serve now (it waits while parked); false: it exits.
    virtual bool predicting(int predictor) = 0;
    // Agent a's part, on its thread: collects from `env` through `client` and hands on what it
    // collects, until the run is over for it.
    virtual void agent(int a, envs::VectorEnv& env, runtime::BatchedInference::Client& client) = 0;
    // Every agent has ended: no more experience comes.
    virtual void agents_done() {}
  };
  // Starts the agents and predictors on `workers` for `run`; returns the predictors' service.
  using StartActing = std::function<runtime::BatchedInference&(runtime::Workers& workers, Run& run)>;

  virtual ~Destination() = default;
  // What the family needs of the learner and the validated config, refused in one line.
  virtual void prepare() {}
  virtual void train(TrainingState& state, int64_t total_steps, int64_t checkpoint_interval_steps,
                     const TrainingCallbacks& callbacks, const StartActing& start) = 0;
};

namespace {

using Destination = CentralInferencePolicy::Destination;

// ---------------------------------------------------------------------------------------------
// On-policy: segments to the trainers (GA3C)

class ToTrainers final : public Destination {
 public:
  ToTrainers(const CentralInferenceConfig& layout, uint64_t run_seed, torch::Device acting_device,
             std::vector<std::unique_ptr<envs::VectorEnv>>& agent_envs, algos::OnPolicyLearner& on_policy,
             explore::Bonus* agent_bonus)
      : config(layout),
        seed(run_seed),
        device(acting_device),
        envs(agent_envs),
        learner(on_policy),
        bonus(agent_bonus) {}

  void prepare() override {
    runtime::require_lag_correction("central_inference", config.max_policy_lag, learner, "trains segments");
  }
  void train(TrainingState& state, int64_t total_steps, int64_t checkpoint_interval_steps,
             const TrainingCallbacks& callbacks, const StartActing& start) override;

  const CentralInferenceConfig& config;
  const uint64_t seed;
  const torch::Device device;
  std::vector<std::unique_ptr<envs::VectorEnv>>& envs;
  algos::OnPolicyLearner& learner;
  explore::Bonus* const bonus;  // may be null; shared by every agent
};

// One train() call: the trainers, and what flows between them and the agents.
class SegmentRun final : public Destination::Run {
 public:
  SegmentRun(ToTrainers& to, TrainingState& state, int64_t total_steps, int64_t checkpoint_interval_steps,
             const TrainingCallbacks& callbacks)
      : to_(to),
        config_(to.config),
        state_(state),
        total_steps_(total_steps),
        callbacks_(callbacks),
        actor_(to.learner),
        threads_({config_.agents, config_.predictors, config_.trainers}, config_.dynamic_adjustment,
                 config_.adjust_interval_seconds, core::derive_seed(to.seed, 0xADu)),
        steps_claimed_(state.global_step),
        reporter_(state, checkpoint_interval_steps),
        workers_("central_inference", config_.wait_timeout_seconds, "policy.central_inference.wait_timeout_seconds"),
        // Per-agent updates: max_policy_lag + 1 slots per agent; otherwise one pool of
        // training_batch x (max_policy_lag + 1).
        training_(workers_.make<runtime::TrainingQueue<runtime::CollectedRollout>>(
            config_.agents, config_.per_agent_updates(),
            (config_.per_agent_updates() ? 1 : int64_t{config_.segments_per_update()}) * (config_.max_policy_lag + 1),
            static_cast<size_t>(config_.segments_per_update()), "agent", "a trainer")) {
    // Per-agent updates: every agent collects as many segments as the run has updates left, so
    // that every update is whole, as under `single`.
    const int64_t per_update = to.learner.rollout_length() * to.envs.front()->num_envs() * config_.agents;
    segments_per_agent_ = (total_steps - state.global_step + per_update - 1) / per_update;
    workers_.on_stop([this] { threads_.close(); });
    actor_.publish(to.learner, state.updates);
  }

  // Every thread draws from its own generator (agents: their actions, which the predictors draw
  // with the asking agent's generator; trainers: minibatches), seeded after the agents' and the
  // predictors'.
  void run(const Destination::StartActing& start) {
    inference_ = &start(workers_, *this);
    for (int t = 0; t < config_.trainers; ++t) {
      workers_.start("trainer " + std::to_string(t),
                     core::thread_seed(to_.seed, static_cast<uint64_t>(config_.agents + config_.predictors + t)),
                     [this, t] {
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

  std::unique_ptr<runtime::PredictorNetwork> network() override {
    return runtime::actor_critic_network(actor_, to_.device);
  }
  bool predicting(int predictor) override { return threads_.predictors.wait_until_active(predictor); }

  // T steps as RolloutCollector takes them under `single`, each action asked for when it is
  // needed (the segment's first after its slot, with the newest parameters), so that one agent
  // taking turns with the learner draws and learns exactly what `single` does.
  void agent(int a, envs::VectorEnv& env, runtime::BatchedInference::Client& client) override {
    const std::string name = "agent " + std::to_string(a);
    runtime::RolloutCollector collector(env, to_.learner.rollout_length(), to_.device);
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
      client.take_first_version();
      runtime::CollectedRollout segment =
          runtime::CollectedRollout::collect(collector, client);  // [T, num_envs / agents]
      segment.version = client.take_first_version();
      if (to_.bonus) segment.rollout = runtime::with_bonus(*to_.bonus, segment.rollout, segment.bonus_metrics);
      training_.push(a, std::move(segment));
    }
  }

  // No more segments will come: the predictors and trainers drain and exit.
  void agents_done() override {
    finishing_ = true;
    training_.close();
    threads_.predictors.close();
    threads_.trainers.close();
  }

 private:
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
    algos::Metrics metrics = runtime::run_on_policy_update(to_.learner, rollout, nullptr, state_, total_steps_);
    // The segments' slots free once train() returns, to start new ones with these parameters.
    actor_.publish(to_.learner, state_.updates);
    updates_done_ += 1;

    for (const runtime::CollectedRollout& segment : segments) segment.record_episodes(episodes_, callbacks_);
    for (const runtime::CollectedRollout& segment : segments) {
      for (const auto& [name, value] : segment.bonus_metrics) {
        metrics[name] += value / static_cast<double>(segments.size());
      }
    }
    const double seconds = std::max(reporter_.elapsed_seconds(), 1e-9);
    inference_->add_metrics(metrics, seconds);
    metrics[runtime::metric::kTrainingsPerSecond] = static_cast<double>(updates_done_.load()) / seconds;
    metrics[runtime::metric::kPolicyLag] = lag / static_cast<double>(segments.size());
    metrics[runtime::metric::kTrainingQueueLength] = static_cast<double>(training_.size());
    threads_.add_metrics(metrics);
    reporter_.report(state_, metrics, episodes_, callbacks_);
  }

  ToTrainers& to_;
  const CentralInferenceConfig& config_;
  TrainingState& state_;
  const int64_t total_steps_;
  const TrainingCallbacks& callbacks_;

  runtime::ActorCopy actor_;  // the predictors' network
  runtime::AdjustedThreads threads_;
  int64_t segments_per_agent_ = 0;      // per-agent updates: what each agent collects in this run
  std::atomic<bool> finishing_{false};  // every agent is done; the rest drain
  std::atomic<int64_t> steps_claimed_;
  std::atomic<int64_t> updates_done_{0};

  std::mutex learner_mutex_;  // learner updates, state_, episodes_ and every callback
  core::EpisodeStats episodes_;
  UpdateReporter reporter_;

  // Declared after everything its threads touch, so that they are joined first.
  runtime::Workers workers_;
  runtime::TrainingQueue<runtime::CollectedRollout>& training_;
  runtime::BatchedInference* inference_ = nullptr;  // the agents' and predictors', a part of workers_
};

void ToTrainers::train(TrainingState& state, int64_t total_steps, int64_t checkpoint_interval_steps,
                       const TrainingCallbacks& callbacks, const StartActing& start) {
  if (state.global_step >= total_steps) return;
  SegmentRun run(*this, state, total_steps, checkpoint_interval_steps, callbacks);
  run.run(start);
}

// ---------------------------------------------------------------------------------------------
// Off-policy: steps into the replay (SEED RL)

// An agent acts through the predictors.
class Predicted final : public runtime::ActingSeat {
 public:
  explicit Predicted(runtime::BatchedInference::Client& client) : client_(client) {}
  algos::Actor& next_actor(int64_t /*steps*/) override { return client_; }

 private:
  runtime::BatchedInference::Client& client_;
};

// One train() call: the agents store every step into the replay (runtime::feed_steps, as actor
// threads do), each as its own stream; the predictors act with the replicas.
class StepRun final : public Destination::Run {
 public:
  StepRun(runtime::Workers& /*workers*/, runtime::ReplayInlet& inlet,
          std::vector<std::unique_ptr<algos::ActorReplica>>& replicas, torch::Device device)
      : inlet_(inlet), replicas_(replicas), device_(device), claimed_(inlet.stored()) {}

  std::unique_ptr<runtime::PredictorNetwork> network() override {
    return runtime::replica_network(replicas_, inlet_.parameters());
  }
  bool predicting(int /*predictor*/) override { return true; }
  void agent(int a, envs::VectorEnv& env, runtime::BatchedInference::Client& client) override {
    Predicted seat(client);
    // Every agent explores as the algorithm's one actor (0 of 1).
    runtime::feed_steps(a, algos::ActingContext{false, 0, 0, 0, 1, -1.0}, "agent " + std::to_string(a), seat, env,
                        device_, claimed_, inlet_);
  }

 private:
  runtime::ReplayInlet& inlet_;
  std::vector<std::unique_ptr<algos::ActorReplica>>& replicas_;
  torch::Device device_;
  std::atomic<int64_t> claimed_;  // steps the agents claimed (>= those stored)
};

// `config`, unless it sets the on-policy layout (refused in one line, before the fields that only
// that layout checks).
void refuse_on_policy_layout(const CentralInferenceConfig& config) {
  const CentralInferenceConfig defaults;
  std::string set;
  const auto add = [&set](bool differs, const std::string& setting) {
    if (differs) set += (set.empty() ? "" : ", ") + setting;
  };
  add(config.trainers != defaults.trainers, "trainers = " + std::to_string(config.trainers));
  add(config.training_batch != defaults.training_batch, "training_batch = " + std::to_string(config.training_batch));
  add(config.max_policy_lag != defaults.max_policy_lag, "max_policy_lag = " + std::to_string(config.max_policy_lag));
  add(config.dynamic_adjustment != defaults.dynamic_adjustment, "dynamic_adjustment = true");
  if (!set.empty()) {
    throw std::invalid_argument(
        "policy 'central_inference' with an off-policy learner learns from its replay on one thread; "
        "policy.central_inference.trainers, training_batch, max_policy_lag and dynamic_adjustment lay out on-policy "
        "training only (got " +
        set + ")");
  }
}

class ToReplay final : public Destination {
 public:
  ToReplay(const CentralInferenceConfig& config, torch::Device device, algos::OffPolicyLearner& learner,
           const explore::Bonus* bonus)
      : config_(config), device_(device), learner_(learner) {
    refuse_on_policy_layout(config);
    runtime::refuse_bonus_off_policy(bonus, learner);
  }

  void prepare() override {
    replicas_ = runtime::require_replay_feed(learner_, "central_inference", config_.predictors);
  }

  void train(TrainingState& state, int64_t total_steps, int64_t checkpoint_interval_steps,
             const TrainingCallbacks& callbacks, const StartActing& start) override {
    // SEED RL's fixed replay ratio: one update per train_frequency env steps, pinned from both sides.
    const runtime::ReplayPacing pace{1, learner_.train_frequency(), learner_.train_frequency(),
                                     config_.wait_timeout_seconds};
    runtime::ReplayFeedPlan plan{"central_inference", "actors", pace, "one update per train_frequency", {}, {}};
    plan.start_feeders = [&](runtime::Workers& workers, runtime::ReplayInlet& inlet) {
      start(workers, workers.make<StepRun>(inlet, replicas_, device_));
    };
    runtime::feed_replay(plan, learner_, episodes_, state, total_steps, checkpoint_interval_steps, callbacks);
  }

 private:
  const CentralInferenceConfig& config_;
  const torch::Device device_;
  algos::OffPolicyLearner& learner_;
  std::vector<std::unique_ptr<algos::ActorReplica>> replicas_;  // one per predictor
  core::EpisodeStats episodes_;
};

// How many agents are still collecting.
struct AgentsAlive {
  AgentsAlive(runtime::Workers& /*workers*/, int agents) : count(agents) {}
  std::atomic<int> count;
};

}  // namespace

CentralInferencePolicy::CentralInferencePolicy(const CentralInferenceConfig& config,
                                               const envs::VectorEnvConfig& env_config, algos::Learner& learner,
                                               torch::Device device, explore::Bonus* bonus)
    : config_(config), seed_(env_config.seed), device_(device) {
  destination_ = runtime::for_family(
      learner,
      [&](algos::OnPolicyLearner& on_policy) -> std::unique_ptr<Destination> {
        return std::make_unique<ToTrainers>(config_, seed_, device_, envs_, on_policy, bonus);
      },
      [&](algos::OffPolicyLearner& off_policy) -> std::unique_ptr<Destination> {
        return std::make_unique<ToReplay>(config_, device_, off_policy, bonus);
      });
  config_ = core::validated(config_);
  envs_ = runtime::thread_env_shares(env_config, config_.agents, "central_inference", "agent",
                                     "actors (policy.central_inference.actors)");
  destination_->prepare();
}

CentralInferencePolicy::~CentralInferencePolicy() = default;

void CentralInferencePolicy::train(TrainingState& state, int64_t total_steps, int64_t checkpoint_interval_steps,
                                   const TrainingCallbacks& callbacks) {
  // Agent 0 draws actions on from where the process generator stands (before an actor copy's
  // construction draws from it), as `single` does on the main thread.
  const at::Generator first_agent = core::copy_of_process_generator();
  // The agents and the predictors, the same for both families: agent a (seeded as the run's
  // thread a) steps its envs through the predictors (the run's threads agents + p).
  const auto start = [&](runtime::Workers& workers, Destination::Run& run) -> runtime::BatchedInference& {
    auto& inference = workers.make<runtime::BatchedInference>(run.network(), config_.predictors, config_.agents,
                                                              envs_.front()->num_envs(), config_.prediction_batch,
                                                              config_.queue_capacity);
    auto& alive = workers.make<AgentsAlive>(config_.agents);
    for (int a = 0; a < config_.agents; ++a) {
      const auto agent = [this, &inference, &alive, &run, a] {
        struct Exit {
          runtime::BatchedInference& inference;
          AgentsAlive& alive;
          Destination::Run& run;
          ~Exit() {
            if (alive.count.fetch_sub(1) == 1) {
              // No more requests or experience will come: the predictors and the learner drain.
              inference.close();
              run.agents_done();
            }
          }
        } exit{inference, alive, run};
        run.agent(a, *envs_[static_cast<size_t>(a)], inference.client(a));
      };
      const std::string name = "agent " + std::to_string(a);
      if (a == 0) {
        workers.start(name, first_agent, agent);
      } else {
        workers.start(name, core::thread_seed(seed_, static_cast<uint64_t>(a)), agent);
      }
    }
    for (int p = 0; p < config_.predictors; ++p) {
      workers.start("predictor " + std::to_string(p),
                    core::thread_seed(seed_, static_cast<uint64_t>(config_.agents + p)), [&inference, &run, p] {
                      while (run.predicting(p) && inference.serve_batch(p)) {
                      }
                    });
    }
    return inference;
  };
  destination_->train(state, total_steps, checkpoint_interval_steps, callbacks, start);
}

std::unique_ptr<Policy> make_central_inference_policy(const PolicyContext& context,
                                                      const CentralInferenceConfig& config) {
  return std::make_unique<CentralInferencePolicy>(config, context.env_config, context.learner, context.device,
                                                  context.bonus);
}

}  // namespace concord::policies
