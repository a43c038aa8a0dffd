#pragma once

#include "concord/comm/communicator.h"
#include "concord/core/config.h"

namespace concord::sync {

// Everything a sync strategy is built from (by its factory, which the registry calls with the
// strategy's own config struct read from sync.<name>.*).
struct SyncContext {
  const core::Config& config;  // the whole run's config, for keys outside sync.<name>.* (run.seed)
  comm::Communicator& communicator;
};

}  // namespace concord::sync
