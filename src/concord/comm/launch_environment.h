#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "concord/comm/communicator.h"

namespace concord::comm {

// Where this process sits in a multi-process run, read from the variables torchrun (and
// `concord launch`) set: RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR,
// MASTER_PORT; or, under `mpirun`, Open MPI's OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE,
// OMPI_COMM_WORLD_LOCAL_RANK (with MASTER_ADDR / MASTER_PORT, defaulting to 127.0.0.1:29500).
struct LaunchEnvironment {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  std::string launcher = "none";  // "torchrun" (also concord launch), "mpirun" or "none"

  // Throws CommError naming the variable that is malformed, out of range or missing while its
  // partners are set (e.g. RANK without WORLD_SIZE, RANK >= WORLD_SIZE).
  static LaunchEnvironment from_environment();
  bool is_distributed() const { return launcher != "none"; }
};

struct ConnectOptions {
  // "gloo" (CPU, every build), "nccl" (CUDA builds of LibTorch with NCCL), "mpi" (LibTorch built
  // with MPI); an unavailable backend is refused with the reason.
  std::string backend = "gloo";
  // Bound on the rendezvous and on every later operation.
  std::chrono::milliseconds timeout = std::chrono::seconds(30);
  // Network interface Gloo uses (e.g. "eth0"); empty: the address MASTER_ADDR resolves through.
  std::string interface;
  // A hash of the resolved config; ranks whose fingerprints differ are refused at start-up.
  std::string config_fingerprint;
  // Rank 0's rendezvous store listens on loopback for a loopback MASTER_ADDR, else on its address
  // towards MASTER_ADDR; true: on every interface, as LibTorch would (comm.store_on_all_interfaces).
  bool store_on_all_interfaces = false;
  // Told the ranks a timed-out collective found stalled (ProcessGroupCommunicator): `concord
  // train` passes them on to `concord launch` (launch::declare_stalled_ranks). Unset: not told.
  std::function<void(const std::vector<int>& stalled, int64_t collective)> on_stalled_peers;
};

// Joins the run described by `environment`: a c10d TCPStore served by rank 0 at
// MASTER_ADDR:MASTER_PORT, then a c10d process group. Before returning, every rank has joined,
// agreed on WORLD_SIZE and on the config fingerprint. Throws CommError (CommTimeout for peers
// that never join, naming them) for a port in use, a wrong WORLD_SIZE, a fingerprint mismatch.
std::unique_ptr<Communicator> connect(const LaunchEnvironment& environment, const ConnectOptions& options);

// The backends ConnectOptions::backend may name, in the registry's order (gloo first).
std::vector<std::string> backend_names();

}  // namespace concord::comm
