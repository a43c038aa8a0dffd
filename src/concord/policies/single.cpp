#include "concord/policies/single.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <torch/torch.h>

#include "concord/core/timer.h"
#include "concord/policies/runtime/exploration_bonus.h"
#include "concord/policies/runtime/learner_drive.h"
#include "concord/policies/runtime/metric_names.h"

namespace concord::policies {

SinglePolicy::SinglePolicy(envs::BatchedEnvs& env, algos::Learner& learner, torch::Device device, explore::Bonus* bonus,
                           int ranks_in_lockstep)
    : env_(env), learner_(learner), device_(device), bonus_(bonus), ranks_in_lockstep_(ranks_in_lockstep) {
  if (env_.is_async()) {
    throw std::invalid_argument("policy 'single' steps all environments together: set env.batch_size = 0 (got " +
                                std::to_string(env_.batch_size()) + ")");
  }
  runtime::refuse_bonus_off_policy(bonus_, learner_);
}

SinglePolicy::SinglePolicy(std::unique_ptr<envs::BatchedEnvs> env, algos::Learner& learner, torch::Device device,
                           explore::Bonus* bonus, int ranks_in_lockstep)
    : SinglePolicy(*env, learner, device, bonus, ranks_in_lockstep) {
  owned_env_ = std::move(env);
}

void SinglePolicy::train(TrainingState& state, int64_t total_steps, int64_t checkpoint_interval_steps,
                         const TrainingCallbacks& callbacks) {
  const std::unique_ptr<runtime::LearnerDrive> drive = runtime::make_learner_drive(learner_, env_, device_, bonus_);
  const auto on_episode = [&](double episode_return, int64_t episode_length) {
    record_episode(episodes_, callbacks, episode_return, episode_length);
  };
  UpdateReporter reporter(state, checkpoint_interval_steps);
  const int64_t steps_per_collect = drive->steps_per_collect() * ranks_in_lockstep_;
  double rollout_seconds = 0.0;
  double update_seconds = 0.0;
  // Polled at every update, and every so often before the first (an off-policy learner's
  // learning_starts): ranks in lockstep poll at the same steps, and a poll that is a collective is
  // not paid per env step.
  constexpr int64_t kPollEvery = 256;
  int64_t iteration = 0;

  while (state.global_step < total_steps) {
    const bool learning = drive->learning(state.global_step);
    if ((learning || iteration % kPollEvery == 0) && callbacks.should_stop && callbacks.should_stop()) break;
    ++iteration;

    // --- Collect experience with the current parameters: a rollout, or one step of every env ---
    core::Stopwatch rollout_clock;
    drive->collect(state.global_step, total_steps, on_episode);
    const int64_t previous_step = state.global_step;
    state.global_step += steps_per_collect;
    rollout_seconds += rollout_clock.elapsed_seconds();

    // --- Learn, where the algorithm's schedule says an update is due ---
    const int64_t due = drive->updates_due(previous_step, state.global_step);
    if (due == 0) continue;
    core::Stopwatch update_clock;
    algos::Metrics metrics = drive->update(state, due, total_steps);
    update_seconds += update_clock.elapsed_seconds();
    if (metrics.empty()) continue;
    metrics[runtime::metric::kRolloutSeconds] = rollout_seconds;
    metrics[runtime::metric::kUpdateSeconds] = update_seconds;
    reporter.report(state, metrics, episodes_, callbacks);
  }
}

std::unique_ptr<Policy> make_single_policy(const PolicyContext& context) {
  if (context.env_config.num_threads != 1) {
    throw std::invalid_argument("policy 'single' steps environments on one thread, but env.num_threads = " +
                                std::to_string(context.env_config.num_threads) +
                                "; use policy 'sync_vector' to step them on several");
  }
  return std::make_unique<SinglePolicy>(std::make_unique<envs::VectorEnv>(context.env_config), context.learner,
                                        context.device, context.bonus);
}

}  // namespace concord::policies
