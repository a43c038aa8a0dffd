#include "concord/policies/single.h"

#include <cmath>
#include <stdexcept>

#include <torch/torch.h>

#include "concord/core/timer.h"

namespace concord::policies {

SinglePolicy::SinglePolicy(envs::VectorEnv& env, algos::Learner& learner, torch::Device device)
    : env_(env), learner_(learner), device_(device) {
  if (env_.is_async()) {
    throw std::invalid_argument("policy 'single' steps all environments together: set env.batch_size = 0 (got " +
                                std::to_string(env_.batch_size()) + ")");
  }
}

torch::Tensor SinglePolicy::observation_tensor(const float* rows) const {
  // from_blob views the engine's buffer; clone() because the engine overwrites it next step.
  auto view = torch::from_blob(const_cast<float*>(rows), {env_.num_envs(), env_.obs_dim()}, torch::kFloat32);
  return view.to(device_, /*non_blocking=*/false, /*copy=*/true);
}

torch::Tensor SinglePolicy::env_actions(const torch::Tensor& actions) const {
  const envs::Space& space = env_.spec().action_space;
  if (space.is_discrete()) return actions.to(torch::kCPU, torch::kInt64).contiguous();
  auto low = torch::tensor(space.low()).to(actions.device());
  auto high = torch::tensor(space.high()).to(actions.device());
  return torch::max(torch::min(actions, high), low).to(torch::kCPU, torch::kFloat32).contiguous();
}

void SinglePolicy::train(TrainingState& state, int64_t total_steps, int64_t checkpoint_interval_steps,
                         const TrainingCallbacks& callbacks) {
  const int64_t steps_per_rollout = learner_.rollout_length();
  const int64_t num_envs = env_.num_envs();
  const bool discrete = env_.spec().action_space.is_discrete();
  const auto float_options = torch::TensorOptions().dtype(torch::kFloat32).device(device_);

  // Rollout storage, preallocated [T, B, ...] as CleanRL does.
  algos::Rollout rollout;
  rollout.observations = torch::zeros({steps_per_rollout, num_envs, env_.obs_dim()}, float_options);
  rollout.actions = discrete ? torch::zeros({steps_per_rollout, num_envs}, float_options.dtype(torch::kInt64))
                             : torch::zeros({steps_per_rollout, num_envs, env_.act_dim()}, float_options);
  rollout.log_probs = torch::zeros({steps_per_rollout, num_envs}, float_options);
  rollout.values = torch::zeros({steps_per_rollout, num_envs}, float_options);
  rollout.rewards = torch::zeros({steps_per_rollout, num_envs}, float_options);
  rollout.terminated = torch::zeros({steps_per_rollout, num_envs}, float_options);
  rollout.truncated = torch::zeros({steps_per_rollout, num_envs}, float_options);
  rollout.truncation_values = torch::zeros({steps_per_rollout, num_envs}, float_options);

  nn::ActorCritic model = learner_.model();
  envs::Batch batch = env_.reset();
  torch::Tensor next_observation = observation_tensor(batch.observations);
  int64_t next_checkpoint_step = (state.global_step / checkpoint_interval_steps + 1) * checkpoint_interval_steps;
  core::Stopwatch clock;
  int64_t steps_at_start = state.global_step;

  while (state.global_step < total_steps) {
    if (callbacks.should_stop && callbacks.should_stop()) break;

    // --- Collect T steps of experience with the current policy ---
    for (int64_t t = 0; t < steps_per_rollout; ++t) {
      torch::NoGradGuard no_grad;
      rollout.observations[t].copy_(next_observation);
      nn::ActResult act = model->act(next_observation);
      rollout.actions[t].copy_(act.action);
      rollout.log_probs[t].copy_(act.log_prob);
      rollout.values[t].copy_(act.value);

      torch::Tensor actions_for_env = env_actions(act.action);
      batch = discrete ? env_.step(actions_for_env.data_ptr<int64_t>()) : env_.step(actions_for_env.data_ptr<float>());
      state.global_step += num_envs;

      rollout.rewards[t].copy_(torch::from_blob(const_cast<float*>(batch.rewards), {num_envs}, torch::kFloat32));
      auto terminated = torch::from_blob(const_cast<uint8_t*>(batch.terminated), {num_envs}, torch::kUInt8);
      auto truncated = torch::from_blob(const_cast<uint8_t*>(batch.truncated), {num_envs}, torch::kUInt8);
      rollout.terminated[t].copy_(terminated);
      rollout.truncated[t].copy_(truncated);
      // Bootstrap a time-limited episode from its own last observation, not the next episode's first.
      if (truncated.any().item<bool>()) {
        torch::Tensor final_values = model->value(observation_tensor(batch.final_observations));
        rollout.truncation_values[t].copy_(final_values * rollout.truncated[t]);
      } else {
        rollout.truncation_values[t].zero_();
      }
      for (int64_t row = 0; row < batch.size; ++row) {
        if (batch.has_final[row]) episodes_.add(batch.episode_returns[row], batch.episode_lengths[row]);
      }
      next_observation = observation_tensor(batch.observations);
    }
    {
      torch::NoGradGuard no_grad;
      rollout.bootstrap_value = model->value(next_observation);
    }

    // --- Learn from it ---
    const double progress = std::min(1.0, static_cast<double>(state.global_step) / static_cast<double>(total_steps));
    algos::Metrics metrics = learner_.update(rollout, progress);
    ++state.updates;
    for (const auto& [name, value] : metrics) {
      if (!std::isfinite(value)) {
        throw std::runtime_error(name + " became " + std::to_string(value) + " at update " +
                                 std::to_string(state.updates) + " (step " + std::to_string(state.global_step) +
                                 "); training stopped, the last checkpoint is intact");
      }
    }
    metrics["charts/SPS"] = static_cast<double>(state.global_step - steps_at_start) / std::max(clock.elapsed_seconds(), 1e-9);
    if (auto recent = episodes_.recent_mean_return()) metrics["charts/episodic_return"] = *recent;
    if (auto recent = episodes_.recent_mean_length()) metrics["charts/episodic_length"] = *recent;
    if (callbacks.on_update) callbacks.on_update(state, metrics, episodes_);

    if (state.global_step >= next_checkpoint_step && callbacks.on_checkpoint) {
      callbacks.on_checkpoint(state);
      next_checkpoint_step += checkpoint_interval_steps;
    }
  }
}

}  // namespace concord::policies
