#include "concord/policies/single.h"

#include <cmath>
#include <cstring>
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
  const int64_t obs_dim = env_.obs_dim();
  const bool discrete = env_.spec().action_space.is_discrete();
  const auto float_options = torch::TensorOptions().dtype(torch::kFloat32).device(device_);
  const auto host_options = torch::TensorOptions().dtype(torch::kFloat32);

  // What the envs produce is written straight into host buffers with memcpy (no tensor op per
  // step); what the actor produces stays on `device`. Observations have T + 1 rows: row T is the
  // observation after the last step, which becomes row 0 of the next rollout.
  torch::Tensor host_observations = torch::zeros({steps_per_rollout + 1, num_envs, obs_dim}, host_options);
  torch::Tensor host_rewards = torch::zeros({steps_per_rollout, num_envs}, host_options);
  torch::Tensor host_terminated = torch::zeros({steps_per_rollout, num_envs}, host_options);
  torch::Tensor host_truncated = torch::zeros({steps_per_rollout, num_envs}, host_options);
  algos::Rollout rollout;
  rollout.actions = discrete ? torch::zeros({steps_per_rollout, num_envs}, float_options.dtype(torch::kInt64))
                             : torch::zeros({steps_per_rollout, num_envs, env_.act_dim()}, float_options);
  rollout.log_probs = torch::zeros({steps_per_rollout, num_envs}, float_options);
  rollout.values = torch::zeros({steps_per_rollout, num_envs}, float_options);
  rollout.truncation_values = torch::zeros({steps_per_rollout, num_envs}, float_options);

  // Views of every row, made once: indexing a tensor per step costs more than the env step.
  std::vector<torch::Tensor> observation_rows, action_rows, log_prob_rows, value_rows;
  for (int64_t t = 0; t <= steps_per_rollout; ++t) observation_rows.push_back(host_observations[t]);
  for (int64_t t = 0; t < steps_per_rollout; ++t) {
    action_rows.push_back(rollout.actions[t]);
    log_prob_rows.push_back(rollout.log_probs[t]);
    value_rows.push_back(rollout.values[t]);
  }
  float* observations_data = host_observations.data_ptr<float>();
  float* rewards_data = host_rewards.data_ptr<float>();
  float* terminated_data = host_terminated.data_ptr<float>();
  float* truncated_data = host_truncated.data_ptr<float>();
  const size_t observation_bytes = static_cast<size_t>(num_envs * obs_dim) * sizeof(float);

  nn::ActorCritic model = learner_.model();
  envs::Batch batch = env_.reset();
  std::memcpy(observations_data, batch.observations, observation_bytes);
  int64_t next_checkpoint_step = (state.global_step / checkpoint_interval_steps + 1) * checkpoint_interval_steps;
  core::Stopwatch clock;
  const int64_t steps_at_start = state.global_step;
  double rollout_seconds = 0.0;
  double update_seconds = 0.0;

  while (state.global_step < total_steps) {
    if (callbacks.should_stop && callbacks.should_stop()) break;

    // --- Collect T steps of experience with the current policy ---
    core::Stopwatch rollout_clock;
    {
      c10::InferenceMode inference;
      rollout.truncation_values.zero_();
      for (int64_t t = 0; t < steps_per_rollout; ++t) {
        nn::ActResult act = model->act(observation_rows[t].to(device_));
        action_rows[t].copy_(act.action);
        log_prob_rows[t].copy_(act.log_prob);
        value_rows[t].copy_(act.value);

        torch::Tensor actions_for_env = env_actions(act.action);
        batch = discrete ? env_.step(actions_for_env.data_ptr<int64_t>()) : env_.step(actions_for_env.data_ptr<float>());
        state.global_step += num_envs;

        std::memcpy(observations_data + (t + 1) * num_envs * obs_dim, batch.observations, observation_bytes);
        bool any_truncated = false;
        for (int64_t row = 0; row < num_envs; ++row) {
          rewards_data[t * num_envs + row] = batch.rewards[row];
          terminated_data[t * num_envs + row] = batch.terminated[row];
          truncated_data[t * num_envs + row] = batch.truncated[row];
          any_truncated = any_truncated || batch.truncated[row];
          if (batch.has_final[row]) {
            episodes_.add(batch.episode_returns[row], batch.episode_lengths[row]);
            if (callbacks.on_episode) callbacks.on_episode(batch.episode_returns[row], batch.episode_lengths[row]);
          }
        }
        // Bootstrap a time-limited episode from its own last observation, not the next episode's first.
        if (any_truncated) {
          torch::Tensor final_values = model->value(observation_tensor(batch.final_observations));
          rollout.truncation_values[t].copy_(final_values * host_truncated[t].to(device_));
        }
      }
      rollout.bootstrap_value = model->value(observation_rows[steps_per_rollout].to(device_)).clone();
    }
    rollout.observations = host_observations.narrow(0, 0, steps_per_rollout).to(device_);
    rollout.rewards = host_rewards.to(device_);
    rollout.terminated = host_terminated.to(device_);
    rollout.truncated = host_truncated.to(device_);
    rollout_seconds += rollout_clock.elapsed_seconds();

    // --- Learn from it ---
    core::Stopwatch update_clock;
    const double progress = std::min(1.0, static_cast<double>(state.global_step) / static_cast<double>(total_steps));
    algos::Metrics metrics = learner_.update(rollout, progress);
    ++state.updates;
    update_seconds += update_clock.elapsed_seconds();
    // The last observation starts the next rollout (after the update: the learner read row 0).
    std::memcpy(observations_data, observations_data + steps_per_rollout * num_envs * obs_dim, observation_bytes);
    for (const auto& [name, value] : metrics) {
      if (!std::isfinite(value)) {
        throw std::runtime_error(name + " became " + std::to_string(value) + " at update " +
                                 std::to_string(state.updates) + " (step " + std::to_string(state.global_step) +
                                 "); training stopped, the last checkpoint is intact");
      }
    }
    metrics["charts/SPS"] = static_cast<double>(state.global_step - steps_at_start) / std::max(clock.elapsed_seconds(), 1e-9);
    metrics["time/rollout_seconds"] = rollout_seconds;
    metrics["time/update_seconds"] = update_seconds;
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
