#pragma once

#include <torch/types.h>

#include <stdexcept>

#include "concord/algos/learner.h"
#include "concord/algos/on_policy_learner.h"
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
  algos::Learner& learner;           // the algorithm: its Learner and, through it, its Actor
  torch::Device device;              // where models and rollouts live (core::resolve_device)
  // The ranks of a multi-process run; nullptr for policies that run in one process.
  comm::Communicator* communicator = nullptr;
  explore::Bonus* bonus = nullptr;  // the exploration bonus every actor adds, one for all; may be null

  // The learner as the on-policy family, for the factories of policies that drive only that
  // family: the policy registry refuses any other before their factory runs.
  algos::OnPolicyLearner& on_policy_learner() const {
    auto* on_policy = dynamic_cast<algos::OnPolicyLearner*>(&learner);
    if (on_policy == nullptr) throw std::logic_error("PolicyContext: the learner is not an on-policy learner");
    return *on_policy;
  }
};

}  // namespace concord::policies
