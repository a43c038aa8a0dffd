#include "concord/sync/sync_strategy.h"

#include <stdexcept>
#include <string>

namespace concord::sync {

std::unique_ptr<SyncStrategy> make_no_sync(const SyncContext& context) {
  if (context.communicator.world_size() > 1) {
    throw std::invalid_argument("sync strategy 'none' keeps replicas apart, but there are " +
                                std::to_string(context.communicator.world_size()) +
                                " ranks; choose allreduce or another");
  }
  return std::make_unique<NoSync>();
}

}  // namespace concord::sync
