#pragma once

#include <string>

#include "concord/comm/launch_environment.h"
#include "concord/core/config.h"

namespace concord::launch {

// The number of ranks a command that can run as threads or as launched processes trains with:
// under a launcher, the processes it started (a different value set for `key` is ignored, with
// a warning); otherwise `configured`, the value of `key`.
int launched_ranks(const comm::LaunchEnvironment& launch, const core::Config& config, const std::string& key,
                   int configured);

}  // namespace concord::launch
