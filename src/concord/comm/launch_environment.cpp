#include "concord/comm/launch_environment.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <thread>

#include <spdlog/spdlog.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef USE_C10D_NCCL
#include <torch/cuda.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include "concord/comm/listen_address.h"
#include "concord/comm/store_probe.h"
#include "concord/comm/torchrun_variables.h"
#include "concord/core/registry.h"

#include "concord/comm/process_group_communicator.h"

namespace concord::comm {
namespace {

const char* variable(const char* name) {
  const char* value = std::getenv(name);
  return (value != nullptr && *value != '\0') ? value : nullptr;
}

int parse_int(const char* name, const char* text, int minimum) {
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || value < minimum || value > torchrun::kLargestValue) {
    throw CommError(std::string(name) + "='" + text + "' is not an integer in [" + std::to_string(minimum) + ", " +
                    std::to_string(torchrun::kLargestValue) + "]");
  }
  return static_cast<int>(value);
}

// Reads a rank/size pair (e.g. RANK and WORLD_SIZE): both or neither must be set.
bool read_pair(const char* rank_name, const char* size_name, int& rank, int& size) {
  const char* rank_text = variable(rank_name);
  const char* size_text = variable(size_name);
  if (rank_text == nullptr && size_text == nullptr) return false;
  if (rank_text == nullptr || size_text == nullptr) {
    throw CommError(std::string(rank_text == nullptr ? rank_name : size_name) + " is not set while " +
                    (rank_text == nullptr ? size_name : rank_name) + " is; a launcher sets both");
  }
  rank = parse_int(rank_name, rank_text, 0);
  size = parse_int(size_name, size_text, 1);
  if (rank >= size) {
    throw CommError(std::string(rank_name) + "=" + rank_text + " is not below " + size_name + "=" + size_text);
  }
  return true;
}

bool is_loopback(const std::string& address) {
  return address == "localhost" || address.rfind("127.", 0) == 0 || address == "::1";
}

// The local address this machine uses to reach `host`: what Gloo must bind so that peers on other
// machines (or network namespaces) can connect back. A UDP connect() only picks the route; no
// packet is sent.
std::string local_address_towards(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* resolved = nullptr;
  if (getaddrinfo(host.c_str(), "9", &hints, &resolved) != 0 || resolved == nullptr) {
    throw CommError("MASTER_ADDR '" + host + "' does not resolve to an IPv4 address");
  }
  const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  std::string local;
  if (fd >= 0 && ::connect(fd, resolved->ai_addr, resolved->ai_addrlen) == 0) {
    sockaddr_in address{};
    socklen_t length = sizeof(address);
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
      char text[INET_ADDRSTRLEN] = {};
      if (inet_ntop(AF_INET, &address.sin_addr, text, sizeof(text)) != nullptr) local = text;
    }
  }
  if (fd >= 0) ::close(fd);
  freeaddrinfo(resolved);
  if (local.empty()) throw CommError("no network route from this machine to MASTER_ADDR '" + host + "'");
  return local;
}

std::string first_line(const std::exception& error) {
  std::string message = error.what();
  if (const size_t newline = message.find('\n'); newline != std::string::npos) message.resize(newline);
  return message;
}

std::string seconds(std::chrono::milliseconds duration) {
  return std::to_string(static_cast<double>(duration.count()) / 1000.0).substr(0, 5) + " s";
}

c10::intrusive_ptr<c10d::Store> open_store(const LaunchEnvironment& environment, const ConnectOptions& options) {
  c10d::TCPStoreOptions store_options;
  store_options.port = static_cast<std::uint16_t>(environment.master_port);
  store_options.isServer = environment.rank == 0;
  store_options.waitWorkers = false;  // joining is checked below, naming the ranks that are missing
  store_options.timeout = options.timeout;
  const std::string where = environment.master_addr + ":" + std::to_string(environment.master_port);
  if (!store_options.isServer) {
    // c10d's client dies of bytes it does not expect, on a thread no caller can catch, and may
    // wait past the timeout for a peer that never answers: a checked handshake first.
    try {
      probe_store(environment.master_addr, environment.master_port, std::chrono::steady_clock::now() + options.timeout);
    } catch (const CommTimeout& error) {
      throw CommTimeout("rank " + std::to_string(environment.rank) + " " + error.what());
    } catch (const CommError& error) {
      throw CommError("rank " + std::to_string(environment.rank) + " " + error.what());
    }
  }
  try {
    // Every rank of a loopback rendezvous is on this machine: the store listens on loopback only.
    // Across machines the others reach it at MASTER_ADDR, through rank 0's address on that route.
    std::optional<ListenOnAddress> listen;
    if (store_options.isServer && !options.store_on_all_interfaces) {
      const std::string address =
          is_loopback(environment.master_addr)
              ? (environment.master_addr == "::1" ? std::string("::1") : std::string("127.0.0.1"))
              : local_address_towards(environment.master_addr);
      listen.emplace(store_options.port, address);
      spdlog::debug("the rendezvous store listens on {} port {}", address, store_options.port);
    }
    auto store = c10::make_intrusive<c10d::TCPStore>(environment.master_addr, store_options);
    if (listen && !listen->redirected()) {
      spdlog::warn("the rendezvous store at {} listens on every interface: this process's bind() is not Concord's",
                   where);
    }
    return store;
  } catch (const std::exception& error) {
    const std::string cause = first_line(error);
    if (environment.rank == 0) {
      if (cause.find("ddress already in use") != std::string::npos || cause.find("EADDRINUSE") != std::string::npos) {
        throw CommError("rank 0 cannot serve the rendezvous store: port " + std::to_string(environment.master_port) +
                        " is already in use (MASTER_PORT; choose a free one, or let `concord launch` pick one)");
      }
      throw CommError("rank 0 cannot serve the rendezvous store on port " + std::to_string(environment.master_port) +
                      ": " + cause);
    }
    throw CommTimeout("rank " + std::to_string(environment.rank) + " could not reach the rendezvous store at " + where +
                      " within " + seconds(options.timeout) +
                      " (is rank 0 running? check MASTER_ADDR/MASTER_PORT): " + cause);
  }
}

std::string to_string(const std::vector<uint8_t>& bytes) { return std::string(bytes.begin(), bytes.end()); }

// Every rank announces "world_size|fingerprint" under its rank; each then waits for all others,
// comparing what they announced with its own, and marks its check done. A rank that finds a
// mismatch refuses the run; rank 0, which serves the store, first waits (briefly) until the
// others have finished their own check, so that every rank names the mismatch rather than
// losing the store under its feet.
void check_join(c10d::Store& store, const LaunchEnvironment& environment, const ConnectOptions& options) {
  const std::string mine = std::to_string(environment.world_size) + "|" + options.config_fingerprint;
  store.set("concord/join/" + std::to_string(environment.rank), std::vector<uint8_t>(mine.begin(), mine.end()));
  std::vector<bool> seen(static_cast<size_t>(environment.world_size), false);
  seen[static_cast<size_t>(environment.rank)] = true;
  const auto deadline = std::chrono::steady_clock::now() + options.timeout;
  const auto mark_done = [&] {
    store.set("concord/join_done/" + std::to_string(environment.rank), std::vector<uint8_t>{1});
  };
  const auto refuse = [&](const std::string& problem) {
    mark_done();
    if (environment.rank == 0) {
      const auto grace = std::chrono::steady_clock::now() +
                         std::min<std::chrono::milliseconds>(options.timeout, std::chrono::seconds(10));
      for (int rank = 1; rank < environment.world_size; ++rank) {
        while (!store.check({"concord/join_done/" + std::to_string(rank)}) &&
               std::chrono::steady_clock::now() < grace) {
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
      }
    }
    throw CommError(problem);
  };
  while (true) {
    std::string missing;
    for (int rank = 0; rank < environment.world_size; ++rank) {
      if (seen[static_cast<size_t>(rank)]) continue;
      const std::string key = "concord/join/" + std::to_string(rank);
      if (!store.check({key})) {
        missing += (missing.empty() ? "" : ", ") + std::to_string(rank);
        continue;
      }
      seen[static_cast<size_t>(rank)] = true;
      const std::string theirs = to_string(store.get(key));
      const size_t bar = theirs.find('|');
      const std::string their_size = theirs.substr(0, bar);
      if (their_size != std::to_string(environment.world_size)) {
        refuse("WORLD_SIZE mismatch: rank " + std::to_string(rank) + " was started with WORLD_SIZE=" + their_size +
               ", rank " + std::to_string(environment.rank) +
               " with WORLD_SIZE=" + std::to_string(environment.world_size));
      }
      if (theirs.substr(bar + 1) != options.config_fingerprint) {
        refuse("config mismatch: rank " + std::to_string(rank) + "'s resolved config (hash " + theirs.substr(bar + 1) +
               ") differs from rank " + std::to_string(environment.rank) + "'s (hash " + options.config_fingerprint +
               "); every rank must run the same config");
      }
    }
    if (missing.empty()) {
      mark_done();
      return;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      throw CommTimeout("rendezvous at " + environment.master_addr + ":" + std::to_string(environment.master_port) +
                        ": rank(s) " + missing + " of WORLD_SIZE=" + std::to_string(environment.world_size) +
                        " never joined within " + seconds(options.timeout));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// check_join(), with a store that fails underneath it (rank 0 stopped) reported as such.
void join(c10d::Store& store, const LaunchEnvironment& environment, const ConnectOptions& options) {
  try {
    check_join(store, environment, options);
  } catch (const CommError&) {
    throw;
  } catch (const std::exception& error) {
    throw CommError("rank " + std::to_string(environment.rank) + " lost the rendezvous store at " +
                    environment.master_addr + ":" + std::to_string(environment.master_port) +
                    " while joining (rank 0 stopped; its own error says why): " + first_line(error));
  }
}

std::shared_ptr<::gloo::transport::Device> gloo_device(const LaunchEnvironment& environment,
                                                       const ConnectOptions& options) {
  std::string interface = options.interface;
  if (interface.empty()) {
    if (const char* from_environment = variable("GLOO_SOCKET_IFNAME")) interface = from_environment;
  }
  try {
    if (!interface.empty()) return c10d::ProcessGroupGloo::createDeviceForInterface(interface);
    const std::string address =
        is_loopback(environment.master_addr) ? "127.0.0.1" : local_address_towards(environment.master_addr);
    return c10d::ProcessGroupGloo::createDeviceForHostname(address);
  } catch (const CommError&) {
    throw;
  } catch (const std::exception& error) {
    throw CommError("Gloo cannot open a device" +
                    (interface.empty() ? std::string() : " on interface '" + interface + "'") + ": " +
                    first_line(error));
  }
}

}  // namespace

LaunchEnvironment LaunchEnvironment::from_environment() {
  LaunchEnvironment environment;
  if (read_pair(torchrun::kRank, torchrun::kWorldSize, environment.rank, environment.world_size)) {
    environment.launcher = "torchrun";
    if (const char* local_rank = variable(torchrun::kLocalRank))
      environment.local_rank = parse_int(torchrun::kLocalRank, local_rank, 0);
    if (const char* local_size = variable(torchrun::kLocalWorldSize)) {
      environment.local_world_size = parse_int(torchrun::kLocalWorldSize, local_size, 1);
    }
  } else if (read_pair("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", environment.rank, environment.world_size)) {
    environment.launcher = "mpirun";
    if (const char* local_rank = variable("OMPI_COMM_WORLD_LOCAL_RANK")) {
      environment.local_rank = parse_int("OMPI_COMM_WORLD_LOCAL_RANK", local_rank, 0);
    }
    if (const char* local_size = variable("OMPI_COMM_WORLD_LOCAL_SIZE")) {
      environment.local_world_size = parse_int("OMPI_COMM_WORLD_LOCAL_SIZE", local_size, 1);
    }
  } else {
    return environment;
  }
  if (const char* address = variable(torchrun::kMasterAddr)) environment.master_addr = address;
  if (const char* port = variable(torchrun::kMasterPort)) {
    environment.master_port = parse_int(torchrun::kMasterPort, port, 1);
    if (environment.master_port > 65535) throw CommError(std::string("MASTER_PORT='") + port + "' is not a TCP port");
  }
  return environment;
}

namespace {

std::unique_ptr<Communicator> connect_gloo(const LaunchEnvironment& environment, const ConnectOptions& options) {
  // Gloo writes to its peers' sockets without MSG_NOSIGNAL: a write to a rank that was just killed
  // would raise SIGPIPE and kill this rank too (seen under actor_processes with a SIGKILLed actor).
  // Ignored, the write fails with EPIPE, which Gloo reports as an error the caller can handle.
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, nullptr);
  c10::intrusive_ptr<c10d::Store> store = open_store(environment, options);
  join(*store, environment, options);
  auto gloo_options = c10d::ProcessGroupGloo::Options::create(options.timeout);
  gloo_options->devices.push_back(gloo_device(environment, options));
  gloo_options->threads = 2;
  try {
    auto group = c10::make_intrusive<c10d::ProcessGroupGloo>(c10::make_intrusive<c10d::PrefixStore>("gloo", store),
                                                             environment.rank, environment.world_size, gloo_options);
    return std::make_unique<ProcessGroupCommunicator>(std::move(group), std::move(store), options.timeout,
                                                      c10::Device(c10::kCPU), options.on_stalled_peers);
  } catch (const std::exception& error) {
    const std::string cause = first_line(error);
    throw CommError("rank " + std::to_string(environment.rank) + " could not connect the Gloo process group: " + cause);
  }
}

#ifdef USE_C10D_NCCL
// NCCL between the GPUs of the ranks: each rank uses GPU local_rank, as torchrun's
// one-process-per-GPU convention has it. CPU tensors are staged through that GPU.
std::unique_ptr<Communicator> connect_nccl(const LaunchEnvironment& environment, const ConnectOptions& options) {
  const int gpus = static_cast<int>(torch::cuda::device_count());
  if (gpus == 0) {
    throw CommError("comm backend 'nccl' needs a CUDA device, and this machine has none (set comm.backend = \"gloo\")");
  }
  // NCCL refuses two ranks on one GPU, and only after every rank has joined.
  if (environment.local_world_size > gpus || environment.local_rank >= gpus) {
    throw CommError("comm backend 'nccl' runs one rank per GPU: this machine has " + std::to_string(gpus) +
                    " GPU(s) for LOCAL_WORLD_SIZE=" + std::to_string(environment.local_world_size) +
                    " ranks (start fewer ranks here, or set comm.backend = \"gloo\")");
  }
  const c10::Device device(c10::kCUDA, static_cast<c10::DeviceIndex>(environment.local_rank));
  c10::intrusive_ptr<c10d::Store> store = open_store(environment, options);
  join(*store, environment, options);
  auto nccl_options = c10d::ProcessGroupNCCL::Options::create();
  nccl_options->timeout = options.timeout;
  try {
    auto group = c10::make_intrusive<c10d::ProcessGroupNCCL>(c10::make_intrusive<c10d::PrefixStore>("nccl", store),
                                                             environment.rank, environment.world_size, nccl_options);
#if TORCH_VERSION_MAJOR >= 2
    group->setBoundDeviceId(device);
#endif
    return std::make_unique<ProcessGroupCommunicator>(std::move(group), std::move(store), options.timeout, device,
                                                      options.on_stalled_peers);
  } catch (const std::exception& error) {
    throw CommError("rank " + std::to_string(environment.rank) +
                    " could not connect the NCCL process group: " + first_line(error));
  }
}
#else
// Backends a user may name but this build cannot run say why, and what to set instead.
std::unique_ptr<Communicator> connect_nccl(const LaunchEnvironment&, const ConnectOptions&) {
  throw CommError(
      "comm backend 'nccl' needs a CUDA build of LibTorch with NCCL; this build runs Gloo on the CPU "
      "(set comm.backend = \"gloo\")");
}
#endif

std::unique_ptr<Communicator> refuse_mpi(const LaunchEnvironment&, const ConnectOptions&) {
  throw CommError(
      "comm backend 'mpi' needs LibTorch built with MPI, and Debian's is not; under mpirun, Concord "
      "reads OMPI_COMM_WORLD_RANK/SIZE and connects with Gloo (set comm.backend = \"gloo\")");
}

using Connect = std::unique_ptr<Communicator> (*)(const LaunchEnvironment&, const ConnectOptions&);

const core::Registry<Connect>& backends() {
  static const core::Registry<Connect> registry("comm backend", "comm.backend",
                                                {{"gloo", connect_gloo}, {"nccl", connect_nccl}, {"mpi", refuse_mpi}});
  return registry;
}

}  // namespace

std::vector<std::string> backend_names() { return backends().names(); }

std::unique_ptr<Communicator> connect(const LaunchEnvironment& environment, const ConnectOptions& options) {
  Connect connect_backend = nullptr;
  try {
    connect_backend = backends().at(options.backend);
  } catch (const std::invalid_argument& unknown) {
    throw CommError(unknown.what());
  }
  return connect_backend(environment, options);
}

}  // namespace concord::comm
