#pragma once

// Runs ranks of a multi-process test as real processes on loopback: copies of the running test
// executable, started with torchrun's variables and CONCORD_TEST_WORKER=<scenario>, which the
// executable's own main() dispatches to a worker function instead of the tests. Header-only.

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace concord::test {

// A TCP port on loopback that was free a moment ago.
inline int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address));
  socklen_t length = sizeof(address);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  ::close(fd);
  return ntohs(address.sin_port);
}

struct RankResult {
  int exit_code = -1;  // exit status, or -signal if killed by a signal
  std::string output;  // stdout and stderr
};

struct RankProcess {
  pid_t pid = -1;
  std::filesystem::path output_path;
};

// Starts `executable arguments...` with this process's environment plus `variables`, its stdout
// and stderr into `output_path`.
inline RankProcess start_process(std::string executable, std::vector<std::string> arguments,
                                 const std::map<std::string, std::string>& variables,
                                 const std::filesystem::path& output_path) {
  std::vector<std::string> environment;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string text = *entry;
    const std::string name = text.substr(0, text.find('='));
    if (variables.count(name) == 0 && name != "CONCORD_TEST_WORKER") environment.push_back(text);
  }
  for (const auto& [name, value] : variables) environment.push_back(name + "=" + value);
  std::vector<char*> envp;
  for (std::string& entry : environment) envp.push_back(entry.data());
  envp.push_back(nullptr);

  std::vector<char*> argv{executable.data()};
  for (std::string& argument : arguments) argv.push_back(argument.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, output_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  RankProcess process;
  process.output_path = output_path;
  if (posix_spawn(&process.pid, executable.c_str(), &actions, nullptr, argv.data(), envp.data()) != 0) process.pid = -1;
  posix_spawn_file_actions_destroy(&actions);
  return process;
}

// Starts a copy of this test executable running worker `scenario` (see the file comment).
inline RankProcess start_rank(const std::string& scenario, std::map<std::string, std::string> variables,
                              const std::filesystem::path& output_path) {
  variables["CONCORD_TEST_WORKER"] = scenario;
  return start_process(std::filesystem::read_symlink("/proc/self/exe").string(), {}, variables, output_path);
}

// torchrun's variables for `rank` of `world_size` with the store on loopback at `port`.
inline std::map<std::string, std::string> rank_variables(int rank, int world_size, int port) {
  return {{"RANK", std::to_string(rank)},       {"WORLD_SIZE", std::to_string(world_size)},
          {"LOCAL_RANK", std::to_string(rank)}, {"LOCAL_WORLD_SIZE", std::to_string(world_size)},
          {"MASTER_ADDR", "127.0.0.1"},         {"MASTER_PORT", std::to_string(port)}};
}

// Waits for the process at most `timeout`, then kills it (a test must never hang).
inline RankResult finish_rank(const RankProcess& process, std::chrono::seconds timeout) {
  RankResult result;
  if (process.pid > 0) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    int status = 0;
    while (true) {
      const pid_t done = ::waitpid(process.pid, &status, WNOHANG);
      if (done == process.pid) break;
      if (std::chrono::steady_clock::now() >= deadline) {
        ::kill(process.pid, SIGKILL);
        ::waitpid(process.pid, &status, 0);
        result.output = "[killed by the test after " + std::to_string(timeout.count()) + " s]\n";
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
  }
  std::ifstream in(process.output_path);
  result.output += std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return result;
}

// Runs `world_size` ranks of `scenario` on a fresh loopback port and waits for all of them.
// `per_rank` adds or overrides variables for single ranks.
inline std::vector<RankResult> run_ranks(const std::string& scenario, int world_size, const std::filesystem::path& dir,
                                         std::map<int, std::map<std::string, std::string>> per_rank = {},
                                         std::chrono::seconds timeout = std::chrono::seconds(60)) {
  const int port = free_port();
  std::vector<RankProcess> processes;
  for (int rank = 0; rank < world_size; ++rank) {
    std::map<std::string, std::string> variables = rank_variables(rank, world_size, port);
    for (const auto& [name, value] : per_rank[rank]) variables[name] = value;
    processes.push_back(start_rank(scenario, variables, dir / ("rank" + std::to_string(rank) + ".log")));
  }
  std::vector<RankResult> results;
  for (const RankProcess& process : processes) results.push_back(finish_rank(process, timeout));
  return results;
}

}  // namespace concord::test
