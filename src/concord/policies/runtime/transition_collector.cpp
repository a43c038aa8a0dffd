#include "concord/policies/runtime/transition_collector.h"

#include <utility>

#include <torch/torch.h>

#include "concord/algos/sequence_replay.h"
#include "concord/policies/runtime/observation_rows.h"

namespace concord::policies::runtime {

TransitionCollector::TransitionCollector(envs::BatchedEnvs& env, torch::Device device)
    : collector_(env, device), device_(device) {}

algos::TensorMap TransitionCollector::step(algos::Actor& actor, const algos::ActingContext& context,
                                           const EpisodeCallback& on_episode) {
  collector_.step(actor, context, *this, on_episode);
  return std::move(transition_);
}

void TransitionCollector::record(const runtime::CollectedStep& step) {
  envs::BatchedEnvs& env = collector_.env();
  const int64_t num_envs = collector_.num_envs();
  const envs::Batch& batch = step.batch;
  // The engine's buffers (and the collector's o_t) are overwritten by the next step: copy what we keep.
  torch::Tensor observations = step.observations.clone();
  torch::Tensor next_observations = observation_view(env, batch.observations, num_envs).clone();
  torch::Tensor rewards = torch::from_blob(const_cast<float*>(batch.rewards), {num_envs}, torch::kFloat32).clone();
  torch::Tensor terminated = torch::empty({num_envs}, torch::kFloat32);
  torch::Tensor truncated = torch::empty({num_envs}, torch::kFloat32);
  float* terminated_rows = terminated.data_ptr<float>();
  float* truncated_rows = truncated.data_ptr<float>();
  bool any_final = false;
  for (int64_t row = 0; row < num_envs; ++row) {
    terminated_rows[row] = batch.terminated[row];
    truncated_rows[row] = batch.truncated[row];
    any_final = any_final || batch.has_final[row];
  }
  // Bootstrap (or not) from the ended episode's own last observation, not the next one's first.
  if (any_final) {
    const torch::Tensor finals = observation_view(env, batch.final_observations, num_envs);
    for (int64_t row = 0; row < num_envs; ++row) {
      if (batch.has_final[row]) next_observations[row].copy_(finals[row]);
    }
  }
  transition_ = {
      {algos::transition::kObservations, algos::on_device(observations, device_)},
      {algos::transition::kActions, step.acted.actions},
      {algos::transition::kRewards, algos::on_device(rewards, device_)},
      {algos::transition::kTerminated, algos::on_device(terminated, device_)},
      {algos::transition::kTruncated, algos::on_device(truncated, device_)},
      {algos::transition::kNextObservations, algos::on_device(next_observations, device_)},
  };
  // An actor with memory: the state it acted from at o_t, which a sequence replay stores at each
  // sequence's start (algos/sequence_replay.h); zeros, the initial state, before its first call.
  for (const auto& [name, next_state] : step.acted.state) {
    const auto before = step.state.find(name);
    transition_[algos::kTransitionStatePrefix + name] =
        before == step.state.end() ? torch::zeros_like(next_state) : before->second;
  }
}

}  // namespace concord::policies::runtime
