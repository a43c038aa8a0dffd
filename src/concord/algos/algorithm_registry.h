#pragma once

#include <memory>
#include <string>
#include <vector>

#include "concord/algos/learner.h"
#include "concord/core/config.h"
#include "concord/envs/space.h"

namespace concord::algos {

// The algorithms a run can name, one registry line each (algorithm_registry.cpp), and their
// config keys: algo.<name>.<key> for each field of the algorithm's config struct (its fields(),
// declared beside the struct, defaults taken from it), plus the network keys they share:
// algo.<key> for nn::ActorCriticConfig::fields(). Adding an algorithm: docs/extending.md.

// Declares every algorithm's keys. Throws std::logic_error if one is already declared.
void declare_algorithm_keys(core::ConfigSchema& schema);

// The names make_learner accepts, sorted: "a2c", "ppo".
std::vector<std::string> algorithm_names();

// Builds the named algorithm's Learner from the algo.* keys of `config` (whose schema must come
// from declare_algorithm_keys) and a network shaped by the spaces: a Box observation space gives
// obs_shape; a Discrete(n) action space gives n discrete actions, a Box one continuous actions
// of its flat size. Throws std::invalid_argument for an unknown name ("unknown algorithm 'x'
// (known: a2c, ppo)"), a Discrete observation space, or invalid hyperparameters.
std::unique_ptr<Learner> make_learner(const std::string& name, const core::Config& config,
                                      const envs::Space& observation_space, const envs::Space& action_space,
                                      torch::Device device = torch::kCPU);

// The steps of each env in one rollout of the named algorithm as `config` sets it (its num_steps):
// what one on-policy update learns from per env; 0 for an algorithm that learns from a replay.
// Throws std::invalid_argument for an unknown name.
int64_t rollout_steps(const std::string& name, const core::Config& config);

}  // namespace concord::algos
