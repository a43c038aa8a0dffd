#include "concord/cli/torchrun_environment.h"

#include <stdexcept>

namespace concord::cli {

std::vector<std::pair<std::string, std::string>> torchrun_environment(const LaunchTopology& topology, int local_rank) {
  if (topology.nproc_per_node < 1 || topology.nnodes < 1 || topology.node_rank < 0 ||
      topology.node_rank >= topology.nnodes) {
    throw std::invalid_argument("impossible launch topology: nproc_per_node " +
                                std::to_string(topology.nproc_per_node) + ", nnodes " +
                                std::to_string(topology.nnodes) + ", node_rank " + std::to_string(topology.node_rank));
  }
  if (local_rank < 0 || local_rank >= topology.nproc_per_node) {
    throw std::invalid_argument("local rank " + std::to_string(local_rank) + " outside [0, " +
                                std::to_string(topology.nproc_per_node) + ")");
  }
  const std::string rank = std::to_string(topology.global_rank(local_rank));
  const std::string world_size = std::to_string(topology.world_size());
  // Concord runs one role per launch, so the role ranks are the global ones (as torchrun's
  // default role "default" gives); the launcher never restarts workers.
  return {
      {"RANK", rank},
      {"WORLD_SIZE", world_size},
      {"LOCAL_RANK", std::to_string(local_rank)},
      {"LOCAL_WORLD_SIZE", std::to_string(topology.nproc_per_node)},
      {"GROUP_RANK", std::to_string(topology.node_rank)},
      {"GROUP_WORLD_SIZE", std::to_string(topology.nnodes)},
      {"ROLE_RANK", rank},
      {"ROLE_WORLD_SIZE", world_size},
      {"ROLE_NAME", "default"},
      {"MASTER_ADDR", topology.master_addr},
      {"MASTER_PORT", std::to_string(topology.master_port)},
      {"TORCHELASTIC_RESTART_COUNT", "0"},
      {"TORCHELASTIC_MAX_RESTARTS", "0"},
  };
}

}  // namespace concord::cli
