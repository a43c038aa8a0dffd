#include "concord/policies/single.h"
#include "concord/policies/on_policy_update.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <torch/torch.h>

#include "concord/core/timer.h"
#include "concord/policies/exploration_bonus.h"
#include "concord/policies/metric_names.h"
#include "concord/policies/rollout_collector.h"
#include "concord/policies/transition_collector.h"

namespace concord::policies {

SinglePolicy::SinglePolicy(envs::BatchedEnvs& env, algos::Learner& learner, torch::Device device, explore::Bonus* bonus,
                           int ranks_in_lockstep)
    : env_(env), learner_(learner), device_(device), bonus_(bonus), ranks_in_lockstep_(ranks_in_lockstep) {
  if (env_.is_async()) {
    throw std::invalid_argument("policy 'single' steps all environments together: set env.batch_size = 0 (got " +
                                std::to_string(env_.batch_size()) + ")");
  }
  refuse_bonus_off_policy(bonus_, learner_);
}

SinglePolicy::SinglePolicy(std::unique_ptr<envs::BatchedEnvs> env, algos::Learner& learner, torch::Device device,
                           explore::Bonus* bonus, int ranks_in_lockstep)
    : SinglePolicy(*env, learner, device, bonus, ranks_in_lockstep) {
  owned_env_ = std::move(env);
}

void SinglePolicy::train(TrainingState& state, int64_t total_steps, int64_t checkpoint_interval_steps,
                         const TrainingCallbacks& callbacks) {
  if (auto* off_policy = dynamic_cast<algos::OffPolicyLearner*>(&learner_)) {
    train_off_policy(*off_policy, state, total_steps, checkpoint_interval_steps, callbacks);
  } else if (auto* on_policy = dynamic_cast<algos::OnPolicyLearner*>(&learner_)) {
    train_on_policy(*on_policy, state, total_steps, checkpoint_interval_steps, callbacks);
  } else {
    throw std::logic_error("policy 'single': the learner is neither on- nor off-policy");
  }
}

void SinglePolicy::train_on_policy(algos::OnPolicyLearner& learner, TrainingState& state, int64_t total_steps,
                                   int64_t checkpoint_interval_steps, const TrainingCallbacks& callbacks) {
  RolloutCollector collector(env_, learner.rollout_length(), device_);
  nn::ActorCritic model = learner.model();
  const auto on_episode = [&](double episode_return, int64_t episode_length) {
    record_episode(episodes_, callbacks, episode_return, episode_length);
  };
  UpdateReporter reporter(state, checkpoint_interval_steps);
  double rollout_seconds = 0.0;
  double update_seconds = 0.0;

  while (state.global_step < total_steps) {
    if (callbacks.should_stop && callbacks.should_stop()) break;

    // --- Collect T steps of experience with the current policy ---
    core::Stopwatch rollout_clock;
    const algos::Rollout& collected = collector.collect(model, on_episode);
    state.global_step += collector.env_steps_per_rollout() * ranks_in_lockstep_;
    rollout_seconds += rollout_clock.elapsed_seconds();

    // --- Learn from it ---
    core::Stopwatch update_clock;
    algos::Metrics metrics = run_on_policy_update(learner, collected, bonus_, state, total_steps);
    update_seconds += update_clock.elapsed_seconds();
    metrics[metric::kRolloutSeconds] = rollout_seconds;
    metrics[metric::kUpdateSeconds] = update_seconds;
    reporter.report(state, metrics, episodes_, callbacks);
  }
}

void SinglePolicy::train_off_policy(algos::OffPolicyLearner& learner, TrainingState& state, int64_t total_steps,
                                    int64_t checkpoint_interval_steps, const TrainingCallbacks& callbacks) {
  TransitionCollector collector(env_, device_);
  algos::Actor& actor = learner.actor();
  const auto on_episode = [&](double episode_return, int64_t episode_length) {
    record_episode(episodes_, callbacks, episode_return, episode_length);
  };
  UpdateReporter reporter(state, checkpoint_interval_steps);
  const int64_t steps_per_iteration = collector.num_envs() * ranks_in_lockstep_;
  const int64_t learning_starts = learner.learning_starts();
  const int64_t train_frequency = learner.train_frequency();
  double rollout_seconds = 0.0;
  double update_seconds = 0.0;
  // Polled at every update, and every so often before the first: ranks in lockstep poll at the
  // same steps, and a poll that is a collective is not paid per env step.
  constexpr int64_t kPollEvery = 256;
  int64_t iteration = 0;

  while (state.global_step < total_steps) {
    const bool learning = state.global_step > learning_starts;
    if ((learning || iteration % kPollEvery == 0) && callbacks.should_stop && callbacks.should_stop()) break;
    ++iteration;

    // --- Act once in every env and remember the transitions ---
    core::Stopwatch rollout_clock;
    const algos::ActingContext acting{false, state.global_step, total_steps, 0, 1};
    learner.observe(collector.step(actor, acting, on_episode));
    const int64_t previous_step = state.global_step;
    state.global_step += steps_per_iteration;
    rollout_seconds += rollout_clock.elapsed_seconds();

    // --- Learn at every multiple of train_frequency passed beyond learning_starts ---
    const int64_t due = off_policy_updates_due(previous_step, state.global_step, learning_starts, train_frequency);
    if (due == 0) continue;
    core::Stopwatch update_clock;
    algos::Metrics metrics = run_off_policy_updates(learner, state, due, total_steps);
    update_seconds += update_clock.elapsed_seconds();
    if (metrics.empty()) continue;
    metrics[metric::kRolloutSeconds] = rollout_seconds;
    metrics[metric::kUpdateSeconds] = update_seconds;
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
