#include "concord/policies/runtime/env_actions.h"

#include <torch/torch.h>

namespace concord::policies::runtime {

EnvActions::EnvActions(const envs::Space& action_space, torch::Device device) : discrete_(action_space.is_discrete()) {
  if (!discrete_) {
    low_ = torch::tensor(action_space.low()).to(device);
    high_ = torch::tensor(action_space.high()).to(device);
  }
}

envs::Batch EnvActions::step(envs::BatchedEnvs& env, const torch::Tensor& actions) const {
  if (discrete_) {
    // Host int64 actions (the usual case) are read where they lie, without an operation.
    const bool on_host = actions.device().is_cpu() && actions.scalar_type() == torch::kInt64;
    const torch::Tensor indices = (on_host ? actions : actions.to(torch::kCPU, torch::kInt64)).contiguous();
    return env.step(indices.data_ptr<int64_t>());
  }
  const torch::Tensor clipped =
      torch::max(torch::min(actions, high_), low_).to(torch::kCPU, torch::kFloat32).contiguous();
  return env.step(clipped.data_ptr<float>());
}

}  // namespace concord::policies::runtime
