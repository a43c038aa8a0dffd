#include "concord/launch/launched_ranks.h"

#include <spdlog/spdlog.h>

namespace concord::launch {

int launched_ranks(const comm::LaunchEnvironment& launch, const core::Config& config, const std::string& key,
                   int configured) {
  if (!launch.is_distributed()) return configured;
  if (configured != launch.world_size && config.origin(key) != "default") {
    spdlog::warn("{} = {} is ignored: this run has the {} processes `concord launch` started", key, configured,
                 launch.world_size);
  }
  return launch.world_size;
}

}  // namespace concord::launch
