#include "concord/policies/single.h"

#include <cmath>
#include <stdexcept>

#include <torch/torch.h>

#include "concord/core/timer.h"
#include "concord/policies/exploration_bonus.h"
#include "concord/policies/rollout_collector.h"

namespace concord::policies {

SinglePolicy::SinglePolicy(envs::VectorEnv& env, algos::Learner& learner, torch::Device device, explore::Bonus* bonus,
                           int ranks_in_lockstep)
    : env_(env), learner_(learner), device_(device), bonus_(bonus), ranks_in_lockstep_(ranks_in_lockstep) {
  if (env_.is_async()) {
    throw std::invalid_argument("policy 'single' steps all environments together: set env.batch_size = 0 (got " +
                                std::to_string(env_.batch_size()) + ")");
  }
}

SinglePolicy::SinglePolicy(std::unique_ptr<envs::VectorEnv> env, algos::Learner& learner, torch::Device device,
                           explore::Bonus* bonus, int ranks_in_lockstep)
    : SinglePolicy(*env, learner, device, bonus, ranks_in_lockstep) {
  owned_env_ = std::move(env);
}

void SinglePolicy::train(TrainingState& state, int64_t total_steps, int64_t checkpoint_interval_steps,
                         const TrainingCallbacks& callbacks) {
  RolloutCollector collector(env_, learner_.rollout_length(), device_);
  nn::ActorCritic model = learner_.model();
  const auto on_episode = [&](double episode_return, int64_t episode_length) {
    episodes_.add(episode_return, episode_length);
    if (callbacks.on_episode) callbacks.on_episode(episode_return, episode_length);
  };
  int64_t next_checkpoint_step = (state.global_step / checkpoint_interval_steps + 1) * checkpoint_interval_steps;
  core::Stopwatch clock;
  const int64_t steps_at_start = state.global_step;
  double rollout_seconds = 0.0;
  double update_seconds = 0.0;

  while (state.global_step < total_steps) {
    if (callbacks.should_stop && callbacks.should_stop()) break;

    // --- Collect T steps of experience with the current policy ---
    core::Stopwatch rollout_clock;
    const algos::Rollout& collected = collector.collect(model, on_episode);
    state.global_step += collector.env_steps_per_rollout() * ranks_in_lockstep_;
    algos::Metrics bonus_metrics;
    const algos::Rollout rollout = bonus_ ? with_bonus(*bonus_, collected, bonus_metrics) : collected;
    rollout_seconds += rollout_clock.elapsed_seconds();

    // --- Learn from it ---
    core::Stopwatch update_clock;
    const double progress = std::min(1.0, static_cast<double>(state.global_step) / static_cast<double>(total_steps));
    algos::Metrics metrics = learner_.update(rollout, progress);
    ++state.updates;
    update_seconds += update_clock.elapsed_seconds();
    check_finite(metrics, state);

    metrics.insert(bonus_metrics.begin(), bonus_metrics.end());
    metrics["charts/SPS"] =
        static_cast<double>(state.global_step - steps_at_start) / std::max(clock.elapsed_seconds(), 1e-9);
    metrics["time/rollout_seconds"] = rollout_seconds;
    metrics["time/update_seconds"] = update_seconds;
    report_update(state, metrics, episodes_, callbacks, checkpoint_interval_steps, next_checkpoint_step);
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
