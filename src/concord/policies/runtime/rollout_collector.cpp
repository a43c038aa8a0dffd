#include "concord/policies/runtime/rollout_collector.h"

#include <cstring>

#include <c10/core/InferenceMode.h>
#include <torch/torch.h>

#include "concord/policies/runtime/observation_rows.h"

namespace concord::policies::runtime {

RolloutCollector::RolloutCollector(envs::BatchedEnvs& env, int64_t steps_per_rollout, torch::Device device)
    : collector_(env, device),
      steps_(steps_per_rollout),
      device_(device),
      num_envs_(env.num_envs()),
      obs_bytes_(env.obs_bytes()) {
  const bool discrete = env.spec().action_space.is_discrete();
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
  host_episode_starts_ = torch::zeros({steps_, num_envs_}, on_host);
  rollout_.actions = discrete ? torch::zeros({steps_, num_envs_}, on_device.dtype(torch::kInt64))
                              : torch::zeros({steps_, num_envs_, env.act_dim()}, on_device);
  rollout_.log_probs = torch::zeros({steps_, num_envs_}, on_device);
  rollout_.values = torch::zeros({steps_, num_envs_}, on_device);
  // Views of every row, made once: indexing a tensor per step costs more than the env step.
  for (int64_t t = 0; t <= steps_; ++t) observation_rows_.push_back(host_observations_[t]);
  for (int64_t t = 0; t < steps_; ++t) {
    action_rows_.push_back(rollout_.actions[t]);
    log_prob_rows_.push_back(rollout_.log_probs[t]);
    value_rows_.push_back(rollout_.values[t]);
  }
}

void RolloutCollector::record(const runtime::CollectedStep& step) {
  const int64_t row_bytes = num_envs_ * obs_bytes_;
  auto* observations = static_cast<unsigned char*>(host_observations_.data_ptr());
  std::memcpy(observations + t_ * row_bytes, step.observations.data_ptr(), static_cast<size_t>(row_bytes));
  action_rows_[t_].copy_(step.acted.actions);
  log_prob_rows_[t_].copy_(step.acted.extras.at("log_probs"));
  value_rows_[t_].copy_(step.acted.extras.at("values"));
  if (!step.acted.state.empty()) {
    std::memcpy(host_episode_starts_.data_ptr<float>() + t_ * num_envs_, step.episode_starts.data_ptr<float>(),
                static_cast<size_t>(num_envs_) * sizeof(float));
  }

  const envs::Batch& batch = step.batch;
  float* rewards = host_rewards_.data_ptr<float>() + t_ * num_envs_;
  float* terminated = host_terminated_.data_ptr<float>() + t_ * num_envs_;
  float* truncated = host_truncated_.data_ptr<float>() + t_ * num_envs_;
  auto* final_observations = static_cast<unsigned char*>(host_final_observations_.data_ptr()) + t_ * row_bytes;
  for (int64_t row = 0; row < num_envs_; ++row) {
    rewards[row] = batch.rewards[row];
    terminated[row] = batch.terminated[row];
    truncated[row] = batch.truncated[row];
    // A time-limited episode bootstraps from its own last observation, not the next episode's first.
    if (batch.truncated[row]) {
      std::memcpy(final_observations + row * obs_bytes_,
                  static_cast<const unsigned char*>(batch.final_observations) + row * obs_bytes_,
                  static_cast<size_t>(obs_bytes_));
    }
  }
  ++t_;
}

const algos::Rollout& RolloutCollector::collect(algos::Actor& actor, const EpisodeCallback& on_episode) {
  host_final_observations_.zero_();
  // A network with memory re-runs each env's sequence from the state it started with.
  rollout_.initial_state = collector_.state();
  const algos::ActingContext acting;
  for (t_ = 0; t_ < steps_;) collector_.step(actor, acting, *this, on_episode);
  // Row T is o_T, which the next rollout starts from.
  std::memcpy(observation_rows_[steps_].data_ptr(), collector_.observations().data_ptr(),
              static_cast<size_t>(num_envs_ * obs_bytes_));
  {
    c10::InferenceMode inference;
    rollout_.next_observations = observation_rows_[steps_].to(device_, /*non_blocking=*/false, /*copy=*/true);
    rollout_.bootstrap_value = actor.bootstrap_value(collector_.input()).clone();
  }
  rollout_.observations = host_observations_.narrow(0, 0, steps_).to(device_);
  rollout_.final_observations = host_final_observations_.to(device_);
  rollout_.rewards = host_rewards_.to(device_);
  rollout_.terminated = host_terminated_.to(device_);
  rollout_.truncated = host_truncated_.to(device_);
  if (!collector_.state().empty()) rollout_.episode_starts = host_episode_starts_.to(device_);
  return rollout_;
}

}  // namespace concord::policies::runtime
