#include "concord/policies/runtime/collector.h"

#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

#include <c10/core/InferenceMode.h>
#include <torch/torch.h>

#include "concord/algos/experience.h"
#include "concord/policies/runtime/observation_rows.h"

namespace concord::policies::runtime {

Collector::Collector(envs::BatchedEnvs& env, torch::Device device)
    : env_(env), device_(device), num_envs_(env.num_envs()), env_actions_(env.spec().action_space, device) {
  if (env_.is_async()) {
    throw std::invalid_argument("this policy steps all environments together: set env.batch_size = 0 (got " +
                                std::to_string(env_.batch_size()) + ")");
  }
  const envs::Space& observation_space = env.spec().observation_space;
  observations_ = torch::empty(observation_batch_shape(observation_space, {num_envs_}),
                               torch::TensorOptions().dtype(scalar_type(observation_space.dtype())));
  episode_starts_ = torch::ones({num_envs_}, torch::kFloat32);
  const envs::Batch batch = env_.reset();
  std::memcpy(observations_.data_ptr(), batch.observations, static_cast<size_t>(num_envs_ * env_.obs_bytes()));
}

algos::ActorInput Collector::input() const {
  torch::Tensor observations = algos::on_device(observations_, device_);
  if (state_.empty()) return algos::ActorInput(std::move(observations));
  return {std::move(observations), state_, algos::on_device(episode_starts_, device_)};
}

void Collector::step(algos::Actor& actor, const algos::ActingContext& context, ExperienceSink& sink,
                     const EpisodeCallback& on_episode) {
  algos::ActorOutput acted;
  {
    c10::InferenceMode inference;
    acted = actor.act(input(), context);
  }
  const envs::Batch batch = env_actions_.step(env_, acted.actions);
  sink.record(CollectedStep{observations_, state_, acted, batch, episode_starts_});

  state_ = std::move(acted.state);
  const bool recurrent = !state_.empty();
  float* starts = episode_starts_.data_ptr<float>();
  for (int64_t row = 0; row < num_envs_; ++row) {
    if (batch.has_final[row] && on_episode) on_episode(batch.episode_returns[row], batch.episode_lengths[row]);
    // The envs reset themselves in the step: o_{t+1} starts an episode wherever step t ended one.
    if (recurrent) starts[row] = batch.has_final[row] ? 1.0f : 0.0f;
  }
  std::memcpy(observations_.data_ptr(), batch.observations, static_cast<size_t>(num_envs_ * env_.obs_bytes()));
}

}  // namespace concord::policies::runtime
