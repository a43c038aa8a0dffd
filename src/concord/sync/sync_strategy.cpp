#include "concord/sync/sync_strategy.h"

#include <stdexcept>
#include <string>

#include "concord/core/checkpoint.h"
#include "concord/core/checkpoint_fields.h"

namespace concord::sync {

void save_sync_stats(core::Checkpoint& checkpoint, const SyncStats& stats) {
  checkpoint.metadata["sync"]["bytes"] = stats.bytes;
  checkpoint.metadata["sync"]["rounds"] = stats.rounds;
}

SyncStats load_sync_stats(const core::Checkpoint& checkpoint) {
  return {core::metadata_int(checkpoint, "sync", "bytes"), core::metadata_int(checkpoint, "sync", "rounds")};
}

std::unique_ptr<SyncStrategy> make_no_sync(const SyncContext& context) {
  if (context.communicator.world_size() > 1) {
    throw std::invalid_argument("sync strategy 'none' keeps replicas apart, but there are " +
                                std::to_string(context.communicator.world_size()) +
                                " ranks; choose allreduce or another");
  }
  return std::make_unique<NoSync>();
}

}  // namespace concord::sync
