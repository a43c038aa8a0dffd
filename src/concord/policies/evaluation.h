#pragma once

#include <cstdint>
#include <vector>

#include "concord/envs/vector_env.h"
#include "concord/nn/actor_critic.h"

namespace concord::policies {

// Plays one episode in each of `count` fresh copies of the environment (env_config.env_id; its
// num_envs, batch_size and seed are replaced) and returns their returns, in env order. One
// episode per env, so that short episodes are not over-counted. Actions are the distribution's
// mode unless `stochastic`; continuous actions are clipped to the action space's bounds.
std::vector<double> evaluate_episodes(envs::VectorEnvConfig env_config, nn::ActorCritic model, int64_t count,
                                      uint64_t seed, bool stochastic = false);

}  // namespace concord::policies
