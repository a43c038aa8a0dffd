#include "concord/policies/runtime/apex_learner.h"

#include <algorithm>
#include <stdexcept>

#include "concord/core/timer.h"
#include "concord/policies/runtime/metric_names.h"

namespace concord::policies::runtime {

namespace {

// The learner checks should_stop at least this often while it waits for steps.
constexpr std::chrono::milliseconds kPollSlice{50};

}  // namespace

void StoredSteps::add(int64_t steps, const FinishedEpisodes& finished) {
  global_step_.fetch_add(steps);
  if (finished.empty()) return;
  finished_.insert(finished_.end(), finished.begin(), finished.end());
  has_finished_.store(true);
}

FinishedEpisodes StoredSteps::take_finished() {
  FinishedEpisodes taken;
  if (!has_finished_.load()) return taken;  // the common case, without the actors' mutex
  std::lock_guard<std::mutex> lock(mutex_);
  taken.swap(finished_);
  has_finished_.store(false);
  return taken;
}

void StoredSteps::wake_all() {
  { std::lock_guard<std::mutex> lock(mutex_); }
  changed_.notify_all();
}

TrainingCallbacks StoredSteps::pausing(const TrainingCallbacks& callbacks, TrainingState& state) {
  TrainingCallbacks paused = callbacks;
  if (callbacks.on_checkpoint) {
    paused.on_checkpoint = [this, &callbacks, &state](const TrainingState&) {
      std::lock_guard<std::mutex> lock(mutex_);
      state.global_step = global_step_.load();
      callbacks.on_checkpoint(state);
    };
  }
  return paused;
}

void StoredSteps::wait_beyond(int64_t beyond, int64_t total, const std::function<bool()>& failed,
                              const TrainingCallbacks& callbacks, std::chrono::steady_clock::duration patience,
                              const std::string& what) {
  const auto ready = [&] {
    const int64_t step = global_step_.load();
    return failed() || step > beyond || step >= total;
  };
  int64_t seen = global_step_.load();
  auto deadline = std::chrono::steady_clock::now() + patience;
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      waiting_.store(true);
      const bool done = changed_.wait_for(lock, kPollSlice, ready);
      waiting_.store(false);
      if (done) return;
    }
    if (callbacks.should_stop && callbacks.should_stop()) return;
    const int64_t step = global_step_.load();
    if (step != seen) {
      seen = step;
      deadline = std::chrono::steady_clock::now() + patience;
    } else if (std::chrono::steady_clock::now() >= deadline) {
      throw std::runtime_error(what + " (at step " + std::to_string(step) + ")");
    }
  }
}

int64_t initial_allowance(const ReplayPacing& config, const algos::OffPolicyLearner& learner,
                          const TrainingState& state) {
  return std::max(learner.learning_starts(), state.global_step) + config.max_env_steps_per_update;
}

void learn_back_to_back(const ReplayPacing& config, algos::OffPolicyLearner& learner, ApexStepSource& source,
                        TrainingState& state, int64_t total_steps, int64_t checkpoint_interval_steps,
                        const TrainingCallbacks& callbacks, const core::EpisodeStats& episodes,
                        const std::vector<double>& actor_epsilons) {
  const int num_actors = std::max(1, static_cast<int>(actor_epsilons.size()));
  UpdateReporter reporter(state, checkpoint_interval_steps);
  const int64_t learning_from = std::max(learner.learning_starts(), state.global_step);
  int64_t allowed_step = initial_allowance(config, learner, state);
  int64_t run_updates = 0;
  double update_seconds = 0.0, wait_seconds = 0.0;
  // Updates start once some step of this run is observed and learning_starts is passed.
  int64_t wait_beyond = learning_from;  // update once global_step exceeds this
  while (true) {
    if (callbacks.should_stop && callbacks.should_stop()) break;
    if (source.failed()) break;
    const int64_t step = source.take_steps();
    if (step >= total_steps) break;
    if (step <= wait_beyond) {
      core::Stopwatch wait_clock;
      source.wait_for_steps(wait_beyond);
      wait_seconds += wait_clock.elapsed_seconds();
      continue;
    }

    state.global_step = step;
    const double progress = std::min(1.0, static_cast<double>(step) / static_cast<double>(total_steps));
    core::Stopwatch update_clock;
    algos::Metrics metrics = learner.update(step, progress);
    update_seconds += update_clock.elapsed_seconds();
    if (metrics.empty()) {  // the replay does not hold a batch yet (a resume): wait for more steps
      wait_beyond = step;
      allowed_step = std::max(allowed_step, source.steps_taken() + config.max_env_steps_per_update);
      if (config.max_env_steps_per_update > 0) source.allow_steps(allowed_step);
      continue;
    }
    ++state.updates;
    ++run_updates;
    // min_env_steps_per_update: the next update waits for that many more steps of this run.
    if (config.min_env_steps_per_update > 0) {
      wait_beyond = std::max(wait_beyond, learning_from + run_updates * config.min_env_steps_per_update);
    }
    allowed_step += config.max_env_steps_per_update;
    if (config.max_env_steps_per_update > 0) source.allow_steps(allowed_step);
    check_finite(metrics, state);
    if (run_updates % config.publish_every == 0) source.publish(state.updates);

    source.after_update();
    metrics[metric::kStepsPerSecond] = reporter.steps_per_second(step);
    metrics[metric::kUpdatesPerEnvStep] =
        static_cast<double>(run_updates) / static_cast<double>(std::max<int64_t>(step - learning_from, 1));
    metrics[metric::kUpdateSeconds] = update_seconds;
    metrics[metric::kLearnerWaitSeconds] = wait_seconds;
    // Each actor's exploration metrics (Ape-X's epsilons differ by actor), averaged over the actors.
    algos::Metrics exploration;
    for (int a = 0; a < num_actors; ++a) {
      const double epsilon = actor_epsilons.empty() ? -1.0 : actor_epsilons[static_cast<size_t>(a)];
      const algos::ActingContext context{false, step, total_steps, a, num_actors, epsilon};
      for (const auto& [name, value] : learner.actor().exploration(context)) exploration[name] += value;
    }
    for (const auto& [name, value] : exploration) metrics.emplace(name, value / num_actors);
    reporter.report(state, metrics, episodes, callbacks);
  }
}

}  // namespace concord::policies::runtime
