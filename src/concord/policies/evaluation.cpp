#include "concord/policies/evaluation.h"

#include <c10/core/InferenceMode.h>
#include <torch/torch.h>

namespace concord::policies {

std::vector<double> evaluate_episodes(envs::VectorEnvConfig env_config, nn::ActorCritic model, int64_t count,
                                      uint64_t seed, bool stochastic) {
  env_config.num_envs = static_cast<int>(count);
  env_config.num_threads = 1;
  env_config.batch_size = 0;
  env_config.seed = seed;
  envs::VectorEnv env(env_config);
  const envs::Space& action_space = env.spec().action_space;
  const auto device = model->parameters().front().device();
  std::vector<double> returns(static_cast<size_t>(count), 0.0);
  std::vector<bool> done(static_cast<size_t>(count), false);
  int64_t remaining = count;
  envs::Batch batch = env.reset();
  c10::InferenceMode inference;
  torch::Tensor low, high;
  if (!action_space.is_discrete()) {
    low = torch::tensor(action_space.low()).to(device);
    high = torch::tensor(action_space.high()).to(device);
  }
  while (remaining > 0) {
    auto observations = torch::from_blob(const_cast<float*>(batch.observations), {count, env.obs_dim()}).to(device);
    torch::Tensor actions = model->act(observations, /*deterministic=*/!stochastic).action;
    if (action_space.is_discrete()) {
      actions = actions.to(torch::kCPU, torch::kInt64).contiguous();
      batch = env.step(actions.data_ptr<int64_t>());
    } else {
      actions = torch::max(torch::min(actions, high), low).to(torch::kCPU, torch::kFloat32).contiguous();
      batch = env.step(actions.data_ptr<float>());
    }
    for (int64_t row = 0; row < count; ++row) {
      const auto index = static_cast<size_t>(row);
      if (!done[index] && batch.has_final[row]) {
        returns[index] = batch.episode_returns[row];
        done[index] = true;
        --remaining;
      }
    }
  }
  return returns;
}

}  // namespace concord::policies
