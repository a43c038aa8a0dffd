#pragma once

#include <torch/types.h>

#include "concord/algos/learner.h"
#include "concord/comm/communicator.h"
#include "concord/core/config.h"
#include "concord/envs/vector_env.h"
#include "concord/explore/bonus.h"

namespace concord::policies {

// Everything a policy is built from (by its factory, which the registry calls with the policy's
// own config struct read from policy.<name>.*).
struct PolicyContext {
  const core::Config& config;        // the whole run's config, for keys outside policy.<name>.*
  envs::VectorEnvConfig env_config;  // the [env] section and run.seed
  algos::Learner& learner;           // the algorithm; its model is the Actor fragment
  torch::Device device;              // where models and rollouts live (core::resolve_device)
  // The ranks of a multi-process run; nullptr for policies that run in one process.
  comm::Communicator* communicator = nullptr;
  explore::Bonus* bonus = nullptr;  // the exploration bonus every actor adds, one for all; may be null
};

}  // namespace concord::policies
