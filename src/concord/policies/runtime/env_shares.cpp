#include "concord/policies/runtime/env_shares.h"

#include <stdexcept>

namespace concord::policies::runtime {

envs::VectorEnvConfig env_share(const envs::VectorEnvConfig& config, int part, int parts, const std::string& policy,
                                const std::string& what) {
  if (parts < 1 || config.num_envs % parts != 0) {
    throw std::invalid_argument("policy '" + policy + "': env.num_envs = " + std::to_string(config.num_envs) +
                                " must be divisible by its " + std::to_string(parts) + " " + what);
  }
  return envs::env_slice(config, part, parts);
}

void require_thread_envs(const envs::VectorEnvConfig& config, const std::string& policy, const std::string& thread) {
  if (config.num_threads != 1 || config.batch_size != 0) {
    throw std::invalid_argument("policy '" + policy + "' gives each " + thread +
                                " thread its own synchronous envs: set env.num_threads = 1 and env.batch_size = 0");
  }
}

}  // namespace concord::policies::runtime
