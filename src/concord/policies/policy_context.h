#pragma once

#include <torch/types.h>

#include <stdexcept>

#include "concord/algos/learner.h"
#include "concord/algos/learner_family.h"
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

  // The learner as its family's interface, for a policy's factory for that family: the policy
  // registry calls the factory of the learner's family only (policy_registry.cpp). Throws
  // std::logic_error if called for the other family.
  algos::OnPolicyLearner& on_policy_learner() const {
    auto* on_policy = algos::on_policy(learner);
    if (on_policy == nullptr) throw std::logic_error("PolicyContext: the learner is not an on-policy learner");
    return *on_policy;
  }
  algos::OffPolicyLearner& off_policy_learner() const {
    auto* off_policy = algos::off_policy(learner);
    if (off_policy == nullptr) throw std::logic_error("PolicyContext: the learner is not an off-policy learner");
    return *off_policy;
  }
};

}  // namespace concord::policies
