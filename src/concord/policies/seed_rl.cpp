#include "concord/policies/seed_rl.h"

#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include <torch/torch.h>

#include "concord/envs/registry.h"
#include "concord/policies/runtime/env_shares.h"
#include "concord/policies/runtime/remote_envs.h"
#include "concord/policies/single.h"

namespace concord::policies {
namespace {

comm::Communicator& launched(const PolicyContext& context) {
  if (context.communicator == nullptr || context.communicator->world_size() < 2) {
    throw std::invalid_argument(
        "policy 'seed_rl' steps its envs on actor ranks beside the learner (rank 0): run it under a launcher with at "
        "least 2 ranks (concord launch -n 3 ...)");
  }
  return *context.communicator;
}

}  // namespace

SeedRlPolicy::SeedRlPolicy(const PolicyContext& context)
    : communicator_(launched(context)),
      env_config_(context.env_config),
      spec_(envs::make_env(context.env_config.env_id, context.env_config.options)->spec()),
      learner_(context.learner),
      device_(context.device),
      bonus_(context.bonus) {
  if (communicator_.backend() == "nccl") {
    throw std::invalid_argument(
        "policy 'seed_rl' sends each actor rank's env steps as tagged messages, which NCCL does not offer: set "
        "comm.backend = \"gloo\" (the learner may still act and learn on the GPU: run.device)");
  }
  if (env_config_.batch_size != 0) {
    throw std::invalid_argument("policy 'seed_rl' steps each actor rank's envs together: set env.batch_size = 0 (got " +
                                std::to_string(env_config_.batch_size) + ")");
  }
  runtime::env_share(env_config_, 0, communicator_.world_size() - 1, "seed_rl", "actor ranks");
}

void SeedRlPolicy::train(TrainingState& state, int64_t total_steps, int64_t checkpoint_interval_steps,
                         const TrainingCallbacks& callbacks) {
  const int actors = communicator_.world_size() - 1;
  // Rank 0's env seed for every rank, so that the envs are those of `single` with this seed.
  torch::Tensor seed = torch::tensor({static_cast<int64_t>(env_config_.seed)}, torch::kInt64);
  communicator_.broadcast(seed, 0);
  if (communicator_.rank() > 0) {
    envs::VectorEnvConfig share =
        runtime::env_share(env_config_, communicator_.rank() - 1, actors, "seed_rl", "actor ranks");
    share.seed = static_cast<uint64_t>(seed.item<int64_t>());
    envs::VectorEnv envs(share);
    runtime::serve_envs(envs, communicator_, "seed_rl");
    return;
  }
  auto remote = std::make_unique<runtime::RemoteEnvs>(communicator_, spec_, env_config_.num_envs / actors, "seed_rl");
  runtime::RemoteEnvs& envs = *remote;
  SinglePolicy loop(std::move(remote), learner_, device_, bonus_);
  try {
    loop.train(state, total_steps, checkpoint_interval_steps, callbacks);
  } catch (...) {
    try {
      envs.close();
    } catch (...) {  // NOLINT(bugprone-empty-catch): the run's own error is the one to see
    }
    throw;
  }
  envs.close();
}

std::unique_ptr<Policy> make_seed_rl_policy(const PolicyContext& context) {
  return std::make_unique<SeedRlPolicy>(context);
}

}  // namespace concord::policies
