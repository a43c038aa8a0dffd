#pragma once

#include <memory>
#include <string>
#include <vector>

#include "concord/comm/communicator.h"
#include "concord/core/config.h"
#include "concord/sync/sync_strategy.h"

namespace concord::sync {

// Strategies by name (`sync.strategy`), each with its keys `sync.<name>.<key>` (the fields of the
// config struct beside the strategy): one line per strategy in sync_registry.cpp, naming the
// strategy's factory. Adding a strategy: docs/extending.md.
void declare_sync_keys(core::ConfigSchema& schema);
std::vector<std::string> sync_strategy_names();
// Throws std::invalid_argument naming the unknown strategy and listing the known ones ("unknown
// sync strategy 'x' (known: ...)"), or a key with an invalid value.
std::unique_ptr<SyncStrategy> make_sync_strategy(const std::string& name, const core::Config& config,
                                                 comm::Communicator& communicator);

}  // namespace concord::sync
