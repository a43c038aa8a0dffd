#pragma once

#include <string>
#include <utility>
#include <vector>

namespace concord::launch {

// The shape of a multi-process run: `nproc_per_node` processes on each of `nnodes` machines,
// this machine being node `node_rank`, rank 0's rendezvous store at master_addr:master_port.
struct LaunchTopology {
  int nproc_per_node = 1;  // processes on this node (torchrun's --nproc-per-node)
  int nnodes = 1;          // machines in the run
  int node_rank = 0;       // this machine's index, 0 <= node_rank < nnodes
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;

  int world_size() const { return nproc_per_node * nnodes; }
  int global_rank(int local_rank) const { return node_rank * nproc_per_node + local_rank; }
};

// The variables torchrun gives the process with `local_rank` on this node, so that a child reads
// the same environment under `concord launch` as under torchrun (comm::LaunchEnvironment):
// RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, GROUP_WORLD_SIZE, ROLE_RANK,
// ROLE_WORLD_SIZE, ROLE_NAME, MASTER_ADDR, MASTER_PORT, TORCHELASTIC_RESTART_COUNT,
// TORCHELASTIC_MAX_RESTARTS (the group's restarts so far, and the most allowed). Throws
// std::invalid_argument for an impossible topology or rank.
std::vector<std::pair<std::string, std::string>> torchrun_environment(const LaunchTopology& topology, int local_rank,
                                                                      int restart_count = 0, int max_restarts = 0);

}  // namespace concord::launch
