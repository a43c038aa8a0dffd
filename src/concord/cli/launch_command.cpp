// `concord launch`: starts the local processes of a multi-process run with torchrun's
// environment variables and supervises them (process_supervisor.h).
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include "concord/cli/commands.h"
#include "concord/cli/run_config.h"
#include "concord/core/logging.h"
#include "concord/launch/free_port.h"
#include "concord/launch/launch_control.h"
#include "concord/launch/process_supervisor.h"
#include "concord/launch/torchrun_environment.h"

namespace concord::cli {
namespace {

constexpr int kDefaultMultiNodePort = 29500;  // torchrun's default

struct LaunchFlags {
  launch::LaunchTopology topology;
  int master_port = 0;  // 0: not given
  double grace_seconds = 10.0;
  int max_restarts = 0;
  bool raw_output = false;
  std::vector<std::string> command;
};

bool is_executable_file(const std::filesystem::path& path) {
  std::error_code error;
  return std::filesystem::is_regular_file(path, error) && access(path.c_str(), X_OK) == 0;
}

// The program the children run. "concord" means this very binary, so that
// `concord launch -- concord train` works without `concord` on PATH. Anything else is looked up
// as execvp will, so that a missing program is one clear error before anything starts.
std::string resolve_program(const std::string& name) {
  if (name == "concord") return std::filesystem::read_symlink("/proc/self/exe").string();
  if (name.find('/') != std::string::npos) {
    if (!is_executable_file(name)) throw std::runtime_error("cannot start '" + name + "': not an executable file");
    return name;
  }
  const char* path = std::getenv("PATH");
  std::istringstream directories(path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin");
  std::string directory;
  while (std::getline(directories, directory, ':')) {
    if (is_executable_file(std::filesystem::path(directory.empty() ? "." : directory) / name)) return name;
  }
  throw std::runtime_error("cannot start '" + name + "': no such program in PATH");
}

bool is_loopback(const std::string& address) {
  return address == "localhost" || address == "::1" || address.rfind("127.", 0) == 0;
}

void run_launch(LaunchFlags flags) {
  launch::LaunchTopology& topology = flags.topology;
  if (topology.node_rank >= topology.nnodes) {
    throw CLI::ValidationError("--node-rank", "must be below --nnodes (got " + std::to_string(topology.node_rank) +
                                                  " with --nnodes " + std::to_string(topology.nnodes) + ")");
  }
  if (flags.command.empty()) {
    throw CLI::ValidationError("launch", "needs a command after '--', e.g. concord launch -n 2 -- concord train");
  }
  flags.command[0] = resolve_program(flags.command[0]);

  core::init_logging("info");
  if (flags.master_port != 0) {
    topology.master_port = flags.master_port;
  } else if (topology.nnodes == 1) {
    topology.master_port = launch::find_free_port();
  } else {
    topology.master_port = kDefaultMultiNodePort;
  }
  if (topology.nnodes > 1 && is_loopback(topology.master_addr)) {
    spdlog::warn("--master-addr {} is a loopback address: with --nnodes {} every node must run on this machine",
                 topology.master_addr, topology.nnodes);
  }

  // As torchrun does: N processes each using every core for intra-op parallelism oversubscribe
  // the machine, so each gets one thread unless the user chose otherwise.
  const bool one_thread_each = topology.nproc_per_node > 1 && std::getenv("OMP_NUM_THREADS") == nullptr;
  if (one_thread_each) spdlog::info("OMP_NUM_THREADS=1 for each process (set it to override)");

  const int first_rank = topology.global_rank(0);
  spdlog::info("launching ranks {}-{} of {} (node {} of {}), rendezvous at {}:{}", first_rank,
               first_rank + topology.nproc_per_node - 1, topology.world_size(), topology.node_rank, topology.nnodes,
               topology.master_addr, topology.master_port);

  // Rank 0 may declare, through a file only this user can reach, that its run survives the
  // failure of other ranks; until it does, any failure stops the run.
  std::string control_template = (std::filesystem::temp_directory_path() / "concord-launch-XXXXXX").string();
  if (mkdtemp(control_template.data()) == nullptr) {
    throw std::runtime_error("cannot create a directory like '" + control_template + "': " + std::strerror(errno));
  }
  const std::filesystem::path control_dir = control_template;
  const std::filesystem::path control_file = control_dir / "control";
  // The group's processes; a restarted group continues from the run directory rank 0 declared.
  const auto group = [&](int restart_count, const std::string& run_dir) {
    std::vector<launch::ChildSpec> children;
    for (int local_rank = 0; local_rank < topology.nproc_per_node; ++local_rank) {
      launch::ChildSpec child;
      child.name = "rank " + std::to_string(topology.global_rank(local_rank));
      child.argv = flags.command;
      child.environment = launch::torchrun_environment(topology, local_rank, restart_count, flags.max_restarts);
      if (one_thread_each) child.environment.emplace_back("OMP_NUM_THREADS", "1");
      child.environment.emplace_back(launch::kLaunchControlVariable, control_file.string());
      if (!run_dir.empty()) child.environment.emplace_back(launch::kRestartRunDirVariable, run_dir);
      children.push_back(std::move(child));
    }
    return children;
  };

  launch::SupervisorOptions options;
  options.grace_period = std::chrono::milliseconds(static_cast<long long>(flags.grace_seconds * 1000.0));
  options.prefix_output = !flags.raw_output;
  options.tolerates_failure = [&](std::size_t index) {
    return topology.global_rank(static_cast<int>(index)) != 0 &&
           launch::read_launch_control(control_file).other_ranks_may_fail;
  };
  // A rank whose collective timed out declares the ranks that never reached it: they are named.
  options.explain_failure = [&](std::size_t) { return launch::read_stalled_ranks(control_file); };
  launch::SupervisionResult result;
  try {
    // torchrun's --max-restarts: a failed group is stopped as a whole and started again, up to
    // max_restarts times; a signal to the launcher ends it instead.
    std::string run_dir;
    for (int restart_count = 0;; ++restart_count) {
      result = launch::supervise(group(restart_count, run_dir), options);
      if (result.success || result.received_signal != 0 || restart_count == flags.max_restarts) break;
      const std::string declared = launch::read_launch_control(control_file).run_dir;
      if (!declared.empty()) run_dir = declared;
      std::error_code ignored;
      std::filesystem::remove(control_file, ignored);  // the new group declares afresh
      launch::clear_stalled_ranks(control_file);
      spdlog::warn(
          "restart {} of {}: {}; {}", restart_count + 1, flags.max_restarts, result.failure,
          run_dir.empty() ? std::string("no run directory declared, starting afresh") : "continuing from " + run_dir);
    }
  } catch (...) {
    std::error_code ignored;
    std::filesystem::remove_all(control_dir, ignored);
    throw;
  }
  std::error_code ignored;
  std::filesystem::remove_all(control_dir, ignored);
  if (!result.success) throw std::runtime_error(result.failure);
  // Stopped cleanly by a signal is still not finished: exit as a stopped `concord train` does.
  if (result.stop_signal != 0) throw ExitStatus{signal_exit_status(result.stop_signal)};
}

}  // namespace

void add_launch_command(CLI::App& app) {
  auto flags = std::make_shared<LaunchFlags>();
  CLI::App* command = app.add_subcommand(
      "launch",
      "Start the local processes of a multi-process run and supervise them:\n"
      "  concord launch -n N [--nnodes M --node-rank R --master-addr A --master-port P] -- COMMAND ...\n"
      "Each process gets torchrun's variables: RANK (node-rank * N + local rank), WORLD_SIZE (N * M),\n"
      "LOCAL_RANK, LOCAL_WORLD_SIZE (N), GROUP_RANK (R), MASTER_ADDR, MASTER_PORT, and\n"
      "OMP_NUM_THREADS=1 when N > 1 unless already set. Output lines are prefixed '[rank i] '.\n"
      "When a process fails (non-zero status or a signal), the launcher names its rank and cause,\n"
      "stops the others (SIGTERM, then SIGKILL after --grace-seconds) and exits with status 1;\n"
      "unless rank 0 declared that its run goes on without it (actor_processes, on_actor_failure =\n"
      "\"continue\"): then the launcher only warns. With --max-restarts K it then starts the group\n"
      "again, up to K times, with TORCHELASTIC_RESTART_COUNT set and CONCORD_RESTART_RUN_DIR naming\n"
      "rank 0's run directory: `concord train` and `concord fit` continue from its last checkpoint.\n"
      "SIGINT/SIGTERM/SIGHUP/SIGQUIT to the launcher are forwarded to every process; when each then\n"
      "exits with 0 or 128 + the signal's number, the launcher exits with 128 + that number.");
  command->add_option("-n,--nproc-per-node", flags->topology.nproc_per_node, "Processes to start on this node")
      ->transform(count_between(1, 4096))
      ->capture_default_str();
  command->add_option("--nnodes", flags->topology.nnodes, "Nodes (machines) in the run")
      ->transform(count_between(1, 1 << 16))
      ->capture_default_str();
  command->add_option("--node-rank", flags->topology.node_rank, "This node's index, below --nnodes")
      ->transform(count_between(0, 1 << 16))
      ->capture_default_str();
  command->add_option("--master-addr", flags->topology.master_addr, "Address of the node that hosts rank 0")
      ->capture_default_str();
  command
      ->add_option("--master-port", flags->master_port,
                   "Port of rank 0's rendezvous store; default: with --nnodes 1, a port free on this machine "
                   "(found by binding port 0), otherwise 29500")
      ->transform(count_between(1, 65535));
  command
      ->add_option("--grace-seconds", flags->grace_seconds, "Time processes have to exit after SIGTERM before SIGKILL")
      ->check(CLI::Range(0.0, 3600.0))
      ->capture_default_str();
  command
      ->add_option("--max-restarts", flags->max_restarts,
                   "Times a failed group of processes is stopped and started again, continuing from rank 0's "
                   "last checkpoint (torchrun's --max-restarts)")
      ->transform(count_between(0, 1000))
      ->capture_default_str();
  command->add_flag("--raw-output", flags->raw_output,
                    "Let processes write straight to this terminal, without the '[rank i] ' prefix");
  command->add_option("command", flags->command,
                      "The command each process runs, after '--'; 'concord' means this concord binary");
  command->callback([flags] { run_launch(*flags); });
}

}  // namespace concord::cli
