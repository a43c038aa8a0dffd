#include "concord/policies/transition_collector.h"

#include <cstring>
#include <stdexcept>
#include <string>

#include <c10/core/InferenceMode.h>
#include <torch/torch.h>

#include "concord/policies/observation_rows.h"

namespace concord::policies {

TransitionCollector::TransitionCollector(envs::BatchedEnvs& env, torch::Device device)
    : env_(env), device_(device), num_envs_(env.num_envs()), env_actions_(env.spec().action_space, device) {
  if (env_.is_async()) {
    throw std::invalid_argument("this policy steps all environments together: set env.batch_size = 0 (got " +
                                std::to_string(env_.batch_size()) + ")");
  }
  const envs::Batch batch = env_.reset();
  observations_ = observation_view(env_, batch.observations, num_envs_).clone();
}

algos::TensorMap TransitionCollector::step(algos::Actor& actor, const algos::ActingContext& context,
                                           const EpisodeCallback& on_episode) {
  const torch::Tensor observations = observations_;
  algos::ActorOutput out;
  {
    c10::InferenceMode inference;
    out = actor.act(algos::on_device(observations, device_), context);
  }
  const envs::Batch batch = env_actions_.step(env_, out.actions);

  // The engine's buffers are overwritten by the next step: copy what we keep.
  observations_ = observation_view(env_, batch.observations, num_envs_).clone();
  torch::Tensor next_observations = observations_.clone();
  torch::Tensor rewards = torch::from_blob(const_cast<float*>(batch.rewards), {num_envs_}, torch::kFloat32).clone();
  torch::Tensor terminated = torch::empty({num_envs_}, torch::kFloat32);
  torch::Tensor truncated = torch::empty({num_envs_}, torch::kFloat32);
  float* terminated_rows = terminated.data_ptr<float>();
  float* truncated_rows = truncated.data_ptr<float>();
  bool any_final = false;
  for (int64_t row = 0; row < num_envs_; ++row) {
    terminated_rows[row] = batch.terminated[row];
    truncated_rows[row] = batch.truncated[row];
    if (batch.has_final[row]) {
      any_final = true;
      if (on_episode) on_episode(batch.episode_returns[row], batch.episode_lengths[row]);
    }
  }
  // Bootstrap (or not) from the ended episode's own last observation, not the next one's first.
  if (any_final) {
    const torch::Tensor finals = observation_view(env_, batch.final_observations, num_envs_);
    for (int64_t row = 0; row < num_envs_; ++row) {
      if (batch.has_final[row]) next_observations[row].copy_(finals[row]);
    }
  }
  return {
      {algos::transition::kObservations, algos::on_device(observations, device_)},
      {algos::transition::kActions, out.actions},
      {algos::transition::kRewards, algos::on_device(rewards, device_)},
      {algos::transition::kTerminated, algos::on_device(terminated, device_)},
      {algos::transition::kTruncated, algos::on_device(truncated, device_)},
      {algos::transition::kNextObservations, algos::on_device(next_observations, device_)},
  };
}

}  // namespace concord::policies
