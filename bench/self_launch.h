#pragma once

// Lets a benchmark program be its own launcher: started plainly, it re-executes itself as N rank
// processes on loopback with torchrun's variables (RANK, WORLD_SIZE, LOCAL_RANK,
// LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT) and waits for them; started with RANK set (by
// torchrun, mpirun's wrapper, `concord launch` or this header), it is one of the ranks.
// Header-only, for bench/ programs; tests have their own helpers in tests/comm/rank_processes.h.

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace concord::bench {

// True when a launcher (or run_self_as_ranks) started this process as a rank.
inline bool started_as_rank() {
  const char* rank = std::getenv("RANK");
  return rank != nullptr && *rank != '\0';
}

struct RankOutcome {
  int exit_code = -1;  // exit status; -signal when a signal ended it
  std::string output;  // its stdout and stderr (empty for rank 0 when echoed)
};

namespace detail {

// A TCP port on loopback that the kernel handed out a moment ago. Another process may take it
// before rank 0 binds it; rank 0 then fails with "port ... already in use" and the run says so.
inline int free_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("cannot open a socket to find a free port");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof(address);
  const bool found = ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
                     ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0;
  ::close(fd);
  if (!found) throw std::runtime_error("cannot bind a loopback port to find a free one");
  return ntohs(address.sin_port);
}

// Starts this executable with `arguments` and this environment plus `variables` (which win).
// Its stdout and stderr go to `output_path`, or stay this process's when it is empty.
inline pid_t spawn_self(const std::vector<std::string>& arguments, const std::map<std::string, std::string>& variables,
                        const std::filesystem::path& output_path) {
  std::vector<std::string> environment;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string text = *entry;
    if (variables.count(text.substr(0, text.find('='))) == 0) environment.push_back(text);
  }
  for (const auto& [name, value] : variables) environment.push_back(name + "=" + value);
  std::vector<char*> envp;
  for (std::string& entry : environment) envp.push_back(entry.data());
  envp.push_back(nullptr);

  std::string executable = std::filesystem::read_symlink("/proc/self/exe").string();
  std::vector<std::string> argument_copies = arguments;
  std::vector<char*> argv{executable.data()};
  for (std::string& argument : argument_copies) argv.push_back(argument.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (!output_path.empty()) {
    posix_spawn_file_actions_addopen(&actions, 1, output_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
  }
  pid_t pid = -1;
  const int error = posix_spawn(&pid, executable.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (error != 0) throw std::runtime_error("cannot start " + executable + ": " + std::strerror(error));
  return pid;
}

}  // namespace detail

// Runs `world_size` copies of this program with `arguments` as ranks 0..world_size-1 on
// loopback and waits for all of them. Rank 0 writes to this process's stdout when `echo_rank0`;
// every other output is captured and returned. A rank still running after `timeout` is killed
// (a benchmark in ctest must never hang), as are the others once one rank fails, since they would
// otherwise wait for it until their communication timeout.
//
// `independent_worlds`: instead, start the copies at once as that many separate worlds of one
// rank each (own store, own port), which never communicate: the control run that shows how much
// parallel work the machine itself gives `world_size` processes.
inline std::vector<RankOutcome> run_self_as_ranks(int world_size, const std::vector<std::string>& arguments,
                                                  bool echo_rank0, std::chrono::seconds timeout,
                                                  bool independent_worlds = false) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("concord_bench_ranks_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string shared_port = std::to_string(detail::free_loopback_port());
  std::vector<pid_t> pids;
  std::vector<std::filesystem::path> outputs;
  for (int rank = 0; rank < world_size; ++rank) {
    const std::string rank_in_world = independent_worlds ? "0" : std::to_string(rank);
    const std::string size_of_world = independent_worlds ? "1" : std::to_string(world_size);
    const std::map<std::string, std::string> variables{
        {"RANK", rank_in_world},
        {"WORLD_SIZE", size_of_world},
        {"LOCAL_RANK", rank_in_world},
        {"LOCAL_WORLD_SIZE", size_of_world},
        {"MASTER_ADDR", "127.0.0.1"},
        {"MASTER_PORT", independent_worlds ? std::to_string(detail::free_loopback_port()) : shared_port}};
    outputs.push_back(rank == 0 && echo_rank0 ? std::filesystem::path()
                                              : dir / ("rank" + std::to_string(rank) + ".log"));
    pids.push_back(detail::spawn_self(arguments, variables, outputs.back()));
  }

  std::vector<RankOutcome> outcomes(static_cast<size_t>(world_size));
  std::vector<bool> running(static_cast<size_t>(world_size), true);
  int remaining = world_size;
  bool kill_the_rest = false;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (remaining > 0) {
    for (size_t rank = 0; rank < pids.size(); ++rank) {
      if (!running[rank]) continue;
      int status = 0;
      if (::waitpid(pids[rank], &status, WNOHANG) != pids[rank]) continue;
      running[rank] = false;
      --remaining;
      outcomes[rank].exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
      if (outcomes[rank].exit_code != 0) kill_the_rest = true;
    }
    if (remaining == 0) break;
    const bool late = std::chrono::steady_clock::now() >= deadline;
    if (late || kill_the_rest) {
      for (size_t rank = 0; rank < pids.size(); ++rank) {
        if (!running[rank]) continue;
        ::kill(pids[rank], SIGKILL);
        int status = 0;
        ::waitpid(pids[rank], &status, 0);
        running[rank] = false;
        --remaining;
        outcomes[rank].exit_code = -SIGKILL;
        outcomes[rank].output = late ? "[killed after " + std::to_string(timeout.count()) + " s]\n"
                                     : "[killed because another rank failed]\n";
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }

  for (size_t rank = 0; rank < outputs.size(); ++rank) {
    if (outputs[rank].empty()) continue;
    std::ifstream in(outputs[rank]);
    outcomes[rank].output += std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  std::filesystem::remove_all(dir);
  return outcomes;
}

// Prints every failed rank's exit status and output to stderr; returns whether all succeeded.
inline bool report_rank_failures(const std::vector<RankOutcome>& outcomes) {
  bool all_succeeded = true;
  for (size_t rank = 0; rank < outcomes.size(); ++rank) {
    if (outcomes[rank].exit_code == 0) continue;
    all_succeeded = false;
    std::fprintf(stderr, "rank %zu exited with status %d\n%s", rank, outcomes[rank].exit_code,
                 outcomes[rank].output.c_str());
  }
  return all_succeeded;
}

}  // namespace concord::bench
