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
  if (config.num_threads == 1 && config.batch_size == 0) return;
  const std::string batch = std::to_string(config.batch_size);
  throw std::invalid_argument("policy '" + policy + "' gives each " + thread + " thread its own synchronous envs: " +
                              (config.num_threads != 1 ? "set env.num_threads = 1 and env.batch_size = 0 (got " +
                                                             std::to_string(config.num_threads) + " and " + batch
                                                       : "set env.batch_size = 0 (got " + batch) +
                              ")");
}

std::vector<std::unique_ptr<envs::VectorEnv>> thread_env_shares(const envs::VectorEnvConfig& config, int parts,
                                                                const std::string& policy, const std::string& thread,
                                                                const std::string& what) {
  require_thread_envs(config, policy, thread);
  std::vector<std::unique_ptr<envs::VectorEnv>> shares;
  for (int part = 0; part < parts; ++part) {
    shares.push_back(std::make_unique<envs::VectorEnv>(env_share(config, part, parts, policy, what)));
  }
  return shares;
}

}  // namespace concord::policies::runtime
