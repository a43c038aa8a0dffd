#include "concord/policies/async_learner.h"

#include <algorithm>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "concord/core/config_problems.h"
#include "concord/core/timer.h"
#include "concord/core/torch_thread.h"
#include "concord/policies/runtime/channel.h"
#include "concord/policies/runtime/checkpoint_gate.h"
#include "concord/policies/runtime/metric_names.h"
#include "concord/policies/runtime/parameter_versions.h"
#include "concord/policies/runtime/workers.h"

namespace concord::policies {
namespace {

// The collects of one unit on their way from the collector to the learner, all acted by one
// version: a rollout, or the steps up to the next one after which updates are due (at most
// kMaxCollects of them). One hand-over per update, not per step: a thread's wake-up costs more
// than a step.
struct Unit {
  std::vector<runtime::Gathered> collects;  // in order
  int64_t version = 0;                      // the parameter version that acted
  double seconds = 0.0;                     // collecting them
};
constexpr size_t kMaxCollects = 64;

using Versions = runtime::ParameterVersions<std::unique_ptr<runtime::ParameterSnapshot>>;

// The setting that raises every wait's timeout, for the errors that name it.
constexpr const char* kTimeoutKey = "policy.async_learner.wait_timeout_seconds";

}  // namespace

AsyncLearnerPolicy::AsyncLearnerPolicy(AsyncLearnerConfig config, std::unique_ptr<envs::VectorEnv> env,
                                       algos::Learner& learner, torch::Device device, uint64_t seed,
                                       explore::Bonus* bonus)
    : config_(core::validated(config)), env_(std::move(env)), seed_(seed) {
  if (env_->is_async()) {
    throw std::invalid_argument("policy 'async_learner' steps all environments together: set env.batch_size = 0 (got " +
                                std::to_string(env_->batch_size()) + ")");
  }
  drive_ = runtime::make_split_drive(learner, *env_, device, bonus, "async_learner", config_.max_policy_lag);
}

void AsyncLearnerPolicy::train(TrainingState& state, int64_t total_steps, int64_t checkpoint_interval_steps,
                               const TrainingCallbacks& callbacks) {
  if (state.global_step >= total_steps) return;
  runtime::SplitDrive& drive = *drive_;
  const int64_t steps = drive.steps_per_collect();
  const int64_t first_step = state.global_step;
  const int64_t first_version = state.updates;
  const int64_t lag = config_.max_policy_lag;
  // Units the learner has taken go back to the collector, whose allocator made their tensors:
  // freed on the learner's thread, every free would take the lock of the collector's malloc arena
  // while the collector allocates from it.
  std::mutex spent_mutex;
  std::vector<Unit> spent;
  runtime::Workers workers("async_learner", config_.wait_timeout_seconds, kTimeoutKey);
  // Version v: the parameters after v updates. A unit acts with exactly version first + c - lag (or
  // first, while c < lag; c: the updates of this run due before it), so that which parameters act
  // never depends on how fast the learner is; the learner is then at most `lag` versions past the
  // one the collector reads, since its updates follow the experience the collector has sent.
  auto& versions = workers.make<Versions>(
      lag + 1, [&] { return drive.make_snapshot(); }, "the collector", drive.version_spin_seconds());
  const auto publish = [&](int64_t version) {
    versions.publish(version,
                     [&](std::unique_ptr<runtime::ParameterSnapshot>& snapshot) { drive.publish(*snapshot, version); });
  };
  publish(first_version);
  // The collector runs at most lag + 1 units ahead once learning (it waits for versions); before
  // the first update (off-policy: learning_starts) the channel alone holds it back.
  auto& units = workers.make<runtime::Channel<Unit>>(drive.experience_name(), lag + 2, "the collector", "the learner");
  // A checkpoint waits for the unit being collected and holds off the next.
  auto& gate = workers.make<runtime::CheckpointGate>("the collector", drive.unit_name());

  workers.start("the collector", core::thread_seed(seed_, 0), [&] {
    const std::unique_ptr<runtime::ActingHalf> acting = drive.start_acting();
    int64_t step = first_step;
    int64_t due = 0;      // updates of this run due before `step`
    int64_t loaded = -1;  // the version in the acting copy (none yet)
    while (step < total_steps) {
      const int64_t needed = first_version + std::max<int64_t>(0, due - lag);
      if (needed != loaded) {
        versions.read(needed, [&](std::unique_ptr<runtime::ParameterSnapshot>& snapshot) { acting->load(*snapshot); });
        loaded = needed;
      }
      std::vector<Unit> taken;
      {
        std::lock_guard<std::mutex> lock(spent_mutex);
        taken.swap(spent);
      }
      taken.clear();
      Unit unit;
      unit.version = needed;
      gate.unit([&] {
        core::Stopwatch clock;
        // Every collect of a unit needs the same version: `due` grows only after its last.
        int64_t updates_after = 0;
        while (updates_after == 0 && step < total_steps && unit.collects.size() < kMaxCollects) {
          acting->collect(step, total_steps, unit.collects.emplace_back());
          updates_after = drive.updates_due(step, step + steps);
          step += steps;
        }
        due += updates_after;
        unit.seconds = clock.elapsed_seconds();
      });
      units.push(std::move(unit));
    }
  });

  TrainingCallbacks pausing = callbacks;
  if (callbacks.on_checkpoint) {
    pausing.on_checkpoint = [&](const TrainingState& at) { gate.paused([&] { callbacks.on_checkpoint(at); }); };
  }
  workers.run([&] {
    UpdateReporter reporter(state, checkpoint_interval_steps);
    double rollout_seconds = 0.0, update_seconds = 0.0, wait_seconds = 0.0;
    int64_t version = first_version;
    while (state.global_step < total_steps) {
      if (callbacks.should_stop && callbacks.should_stop()) break;
      Unit unit;
      core::Stopwatch wait_clock;
      if (!units.pop(unit)) break;  // the collector failed: rethrown after the join
      wait_seconds += wait_clock.elapsed_seconds();
      rollout_seconds += unit.seconds;

      for (const runtime::Gathered& gathered : unit.collects) {
        for (const auto& [episode_return, episode_length] : gathered.episodes) {
          record_episode(episodes_, callbacks, episode_return, episode_length);
        }
        drive.take(gathered);
        const int64_t previous_step = state.global_step;
        state.global_step += steps;

        const int64_t due = drive.updates_due(previous_step, state.global_step);
        if (due == 0) continue;
        const int64_t policy_lag = version - unit.version;
        core::Stopwatch update_clock;
        algos::Metrics metrics = drive.update(state, due, total_steps, [&] { publish(++version); });
        update_seconds += update_clock.elapsed_seconds();
        if (metrics.empty()) continue;
        metrics[runtime::metric::kPolicyLag] = static_cast<double>(policy_lag);
        metrics[runtime::metric::kRolloutSeconds] = rollout_seconds;
        metrics[runtime::metric::kUpdateSeconds] = update_seconds;
        metrics[runtime::metric::kLearnerWaitSeconds] = wait_seconds;
        reporter.report(state, metrics, episodes_, pausing);
      }
      std::lock_guard<std::mutex> lock(spent_mutex);
      spent.push_back(std::move(unit));
    }
  });
}

std::unique_ptr<Policy> make_async_learner_policy(const PolicyContext& context, const AsyncLearnerConfig& config) {
  return std::make_unique<AsyncLearnerPolicy>(config, std::make_unique<envs::VectorEnv>(context.env_config),
                                              context.learner, context.device, context.env_config.seed, context.bonus);
}

}  // namespace concord::policies
