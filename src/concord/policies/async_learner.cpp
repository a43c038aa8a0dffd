#include "concord/policies/async_learner.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "concord/core/config_problems.h"
#include "concord/core/timer.h"
#include "concord/core/torch_thread.h"
#include "concord/policies/runtime/actor_copy.h"
#include "concord/policies/runtime/channel.h"
#include "concord/policies/runtime/checkpoint_gate.h"
#include "concord/policies/runtime/collected_rollout.h"
#include "concord/policies/runtime/exploration_bonus.h"
#include "concord/policies/runtime/metric_names.h"
#include "concord/policies/runtime/on_policy_update.h"
#include "concord/policies/runtime/parameter_versions.h"
#include "concord/policies/runtime/rollout_collector.h"
#include "concord/policies/runtime/workers.h"

namespace concord::policies {
namespace {

// A rollout on its way from the collector to the learner.
struct Collected {
  runtime::CollectedRollout collected;
  int64_t env_steps = 0;
  double seconds = 0.0;  // collecting it
};

// The setting that raises every wait's timeout, for the errors that name it.
constexpr const char* kTimeoutKey = "policy.async_learner.wait_timeout_seconds";

}  // namespace

AsyncLearnerPolicy::AsyncLearnerPolicy(AsyncLearnerConfig config, std::unique_ptr<envs::VectorEnv> env,
                                       algos::OnPolicyLearner& learner, torch::Device device, uint64_t seed,
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
}

void AsyncLearnerPolicy::train(TrainingState& state, int64_t total_steps, int64_t checkpoint_interval_steps,
                               const TrainingCallbacks& callbacks) {
  algos::OnPolicyLearner& learner = learner_;
  if (state.global_step >= total_steps) return;
  const int64_t steps_per_rollout = learner.rollout_length() * env_->num_envs();
  const int64_t rollouts_wanted = (total_steps - state.global_step + steps_per_rollout - 1) / steps_per_rollout;
  const int64_t first_version = state.updates;
  const int64_t lag = config_.max_policy_lag;
  runtime::Workers workers("async_learner", config_.wait_timeout_seconds, kTimeoutKey);
  // Rollout k acts with exactly version first + k - lag (or first, while k < lag), so that which
  // parameters act never depends on how fast the learner is; the learner is then at most `lag`
  // versions past the one the collector reads.
  auto& versions = workers.make<runtime::ParameterVersions<runtime::ActorCopy>>(
      lag + 1, [&]() -> runtime::ActorCopy { return runtime::ActorCopy(learner); }, "the collector");
  versions.publish(first_version, [&](runtime::ActorCopy& copy) { copy.publish(learner, first_version); });
  auto& rollouts = workers.make<runtime::Channel<Collected>>("rollouts", lag + 1, "the collector", "the learner");
  // A checkpoint waits for the rollout in progress and holds off the next.
  auto& gate = workers.make<runtime::CheckpointGate>("the collector", "a rollout");

  workers.start("the collector", core::thread_seed(seed_, 0), [&] {
    runtime::ActorCopy acting(learner);  // the collector's own network, refreshed between rollouts
    runtime::RolloutCollector collector(*env_, learner.rollout_length(), device_);
    for (int64_t k = 0; k < rollouts_wanted; ++k) {
      const int64_t needed = std::max(first_version, first_version + k - lag);
      versions.read(needed, [&](runtime::ActorCopy& published) { published.copy_to(acting); });
      rollouts.push(gate.unit([&] {
        Collected item;
        core::Stopwatch clock;
        acting.read([&](nn::ActorCritic& model, int64_t) {
          algos::ActorCriticActor in_line(model);
          item.collected = runtime::CollectedRollout::collect(collector, in_line);
        });
        item.collected.version = needed;
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
      item.collected.record_episodes(episodes_, callbacks);
      state.global_step += item.env_steps;
      rollout_seconds += item.seconds;

      core::Stopwatch update_clock;
      const int64_t policy_lag = state.updates - item.collected.version;
      algos::Metrics metrics =
          runtime::run_on_policy_update(learner, item.collected.rollout, bonus_, state, total_steps);
      const int64_t version = state.updates;
      versions.publish(version, [&](runtime::ActorCopy& copy) { copy.publish(learner, version); });
      update_seconds += update_clock.elapsed_seconds();
      metrics[runtime::metric::kPolicyLag] = static_cast<double>(policy_lag);
      metrics[runtime::metric::kRolloutSeconds] = rollout_seconds;
      metrics[runtime::metric::kUpdateSeconds] = update_seconds;
      metrics[runtime::metric::kLearnerWaitSeconds] = wait_seconds;
      reporter.report(state, metrics, episodes_, pausing);
    }
  });
}

std::unique_ptr<Policy> make_async_learner_policy(const PolicyContext& context, const AsyncLearnerConfig& config) {
  runtime::require_lag_correction("async_learner", config.max_policy_lag, context.on_policy_learner(),
                                  "acts with parameters");
  return std::make_unique<AsyncLearnerPolicy>(config, std::make_unique<envs::VectorEnv>(context.env_config),
                                              context.on_policy_learner(), context.device, context.env_config.seed,
                                              context.bonus);
}

}  // namespace concord::policies
