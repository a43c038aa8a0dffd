#include "concord/launch/torchrun_environment.h"

#include <cstdint>
#include <stdexcept>

#include "concord/comm/torchrun_variables.h"

namespace concord::launch {

std::vector<std::pair<std::string, std::string>> torchrun_environment(const LaunchTopology& topology, int local_rank,
                                                                      int restart_count, int max_restarts) {
  if (topology.nproc_per_node < 1 || topology.nnodes < 1 || topology.node_rank < 0 ||
      topology.node_rank >= topology.nnodes) {
    throw std::invalid_argument("impossible launch topology: nproc_per_node " +
                                std::to_string(topology.nproc_per_node) + ", nnodes " +
                                std::to_string(topology.nnodes) + ", node_rank " + std::to_string(topology.node_rank));
  }
  // In 64 bits: 2^31 processes on 2 nodes must be refused, not overflow.
  const int64_t processes = int64_t{topology.nproc_per_node} * topology.nnodes;
  if (processes > comm::torchrun::kLargestValue) {
    throw std::invalid_argument("launch topology of " + std::to_string(processes) + " processes (" +
                                std::to_string(topology.nproc_per_node) + " on each of " +
                                std::to_string(topology.nnodes) + " nodes): ranks accept at most " +
                                std::to_string(comm::torchrun::kLargestValue));
  }
  if (local_rank < 0 || local_rank >= topology.nproc_per_node) {
    throw std::invalid_argument("local rank " + std::to_string(local_rank) + " outside [0, " +
                                std::to_string(topology.nproc_per_node) + ")");
  }
  const std::string rank = std::to_string(topology.global_rank(local_rank));
  const std::string world_size = std::to_string(topology.world_size());
  // Concord runs one role per launch, so the role ranks are the global ones (as torchrun's
  // default role "default" gives).
  return {
      {comm::torchrun::kRank, rank},
      {comm::torchrun::kWorldSize, world_size},
      {comm::torchrun::kLocalRank, std::to_string(local_rank)},
      {comm::torchrun::kLocalWorldSize, std::to_string(topology.nproc_per_node)},
      {comm::torchrun::kGroupRank, std::to_string(topology.node_rank)},
      {comm::torchrun::kGroupWorldSize, std::to_string(topology.nnodes)},
      {comm::torchrun::kRoleRank, rank},
      {comm::torchrun::kRoleWorldSize, world_size},
      {comm::torchrun::kRoleName, "default"},
      {comm::torchrun::kMasterAddr, topology.master_addr},
      {comm::torchrun::kMasterPort, std::to_string(topology.master_port)},
      {comm::torchrun::kRestartCount, std::to_string(restart_count)},
      {comm::torchrun::kMaxRestarts, std::to_string(max_restarts)},
  };
}

}  // namespace concord::launch
