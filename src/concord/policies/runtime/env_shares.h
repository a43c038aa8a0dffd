#pragma once

#include <memory>
#include <string>
#include <vector>

#include "concord/envs/vector_env.h"

namespace concord::policies::runtime {

// Part `part` of `parts` of the run's envs (envs::env_slice): the share a thread or rank steps,
// seeded as that part of one VectorEnv of env.num_envs would be. Throws std::invalid_argument,
// in one line, unless `parts` divides env.num_envs:
//   policy 'P': env.num_envs = N must be divisible by its K <what>
envs::VectorEnvConfig env_share(const envs::VectorEnvConfig& config, int part, int parts, const std::string& policy,
                                const std::string& what);

// For a policy whose threads each step their own envs: throws std::invalid_argument, in one line,
// unless the envs step synchronously on the calling thread (env.num_threads = 1, env.batch_size = 0):
//   policy 'P' gives each <thread> thread its own synchronous envs: set env.num_threads = 1 and ...
void require_thread_envs(const envs::VectorEnvConfig& config, const std::string& policy, const std::string& thread);

// The envs of `parts` threads that each step their own: require_thread_envs, then each env_share
// (whose error names the threads as `what`).
std::vector<std::unique_ptr<envs::VectorEnv>> thread_env_shares(const envs::VectorEnvConfig& config, int parts,
                                                                const std::string& policy, const std::string& thread,
                                                                const std::string& what);

}  // namespace concord::policies::runtime
