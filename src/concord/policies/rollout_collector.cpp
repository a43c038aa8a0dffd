#include "concord/policies/rollout_collector.h"

#include <cstring>
#include <stdexcept>
#include <string>

#include <c10/core/InferenceMode.h>
#include <torch/torch.h>

#include "concord/policies/observation_rows.h"

namespace concord::policies {

RolloutCollector::RolloutCollector(envs::BatchedEnvs& env, int64_t steps_per_rollout, torch::Device device)
    : env_(env),
      steps_(steps_per_rollout),
      device_(device),
      num_envs_(env.num_envs()),
      discrete_(env.spec().action_space.is_discrete()),
      env_actions_(env.spec().action_space, device) {
  if (env_.is_async()) {
    throw std::invalid_argument("this policy steps all environments together: set env.batch_size = 0 (got " +
                                std::to_string(env_.batch_size()) + ")");
  }
  const auto on_device = torch::TensorOptions().dtype(torch::kFloat32).device(device_);
  const auto on_host = torch::TensorOptions().dtype(torch::kFloat32);
  // Observations keep the env's dtype (uint8 grids stay uint8): the model converts them.
  const envs::Space& observation_space = env.spec().observation_space;
  host_observations_ = torch::zeros(observation_batch_shape(observation_space, {steps_ + 1, num_envs_}),
                                    on_host.dtype(scalar_type(observation_space.dtype())));
  host_final_observations_ =
      torch::zeros(observation_batch_shape(observation_space, {steps_, num_envs_}), host_observations_.options());
  host_rewards_ = torch::zeros({steps_, num_envs_}, on_host);
  host_terminated_ = torch::zeros({steps_, num_envs_}, on_host);
  host_truncated_ = torch::zeros({steps_, num_envs_}, on_host);
  rollout_.actions = discrete_ ? torch::zeros({steps_, num_envs_}, on_device.dtype(torch::kInt64))
                               : torch::zeros({steps_, num_envs_, env_.act_dim()}, on_device);
  rollout_.log_probs = torch::zeros({steps_, num_envs_}, on_device);
  rollout_.values = torch::zeros({steps_, num_envs_}, on_device);
  // Views of every row, made once: indexing a tensor per step costs more than the env step.
  for (int64_t t = 0; t <= steps_; ++t) observation_rows_.push_back(host_observations_[t]);
  for (int64_t t = 0; t < steps_; ++t) {
    action_rows_.push_back(rollout_.actions[t]);
    log_prob_rows_.push_back(rollout_.log_probs[t]);
    value_rows_.push_back(rollout_.values[t]);
  }
  const envs::Batch batch = env_.reset();
  std::memcpy(host_observations_.data_ptr(), batch.observations, static_cast<size_t>(num_envs_ * env_.obs_bytes()));
}

const algos::Rollout& RolloutCollector::collect(runtime::ActingSource& source, const EpisodeCallback& on_episode) {
  auto* observations = static_cast<unsigned char*>(host_observations_.data_ptr());
  float* rewards = host_rewards_.data_ptr<float>();
  float* terminated = host_terminated_.data_ptr<float>();
  float* truncated = host_truncated_.data_ptr<float>();
  auto* final_observations = static_cast<unsigned char*>(host_final_observations_.data_ptr());
  const int64_t obs_bytes = env_.obs_bytes();
  const int64_t row_bytes = num_envs_ * obs_bytes;
  // The last rollout's o_T is this one's o_0.
  if (rollout_.observations.defined()) {
    std::memcpy(observations, observations + steps_ * row_bytes, static_cast<size_t>(row_bytes));
  }

  {
    c10::InferenceMode inference;
    host_final_observations_.zero_();
    for (int64_t t = 0; t < steps_; ++t) {
      nn::ActResult act = source.act(observation_rows_[t].to(device_));
      action_rows_[t].copy_(act.action);
      log_prob_rows_[t].copy_(act.log_prob);
      value_rows_[t].copy_(act.value);

      const envs::Batch batch = env_actions_.step(env_, act.action);

      std::memcpy(observations + (t + 1) * row_bytes, batch.observations, static_cast<size_t>(row_bytes));
      for (int64_t row = 0; row < num_envs_; ++row) {
        rewards[t * num_envs_ + row] = batch.rewards[row];
        terminated[t * num_envs_ + row] = batch.terminated[row];
        truncated[t * num_envs_ + row] = batch.truncated[row];
        // A time-limited episode bootstraps from its own last observation, not the next episode's first.
        if (batch.truncated[row]) {
          std::memcpy(final_observations + (t * num_envs_ + row) * obs_bytes,
                      static_cast<const unsigned char*>(batch.final_observations) + row * obs_bytes,
                      static_cast<size_t>(obs_bytes));
        }
        if (batch.has_final[row] && on_episode) on_episode(batch.episode_returns[row], batch.episode_lengths[row]);
      }
    }
    rollout_.next_observations = observation_rows_[steps_].to(device_, /*non_blocking=*/false, /*copy=*/true);
    rollout_.bootstrap_value = source.value(rollout_.next_observations).clone();
  }
  rollout_.observations = host_observations_.narrow(0, 0, steps_).to(device_);
  rollout_.final_observations = host_final_observations_.to(device_);
  rollout_.rewards = host_rewards_.to(device_);
  rollout_.terminated = host_terminated_.to(device_);
  rollout_.truncated = host_truncated_.to(device_);
  return rollout_;
}

}  // namespace concord::policies
