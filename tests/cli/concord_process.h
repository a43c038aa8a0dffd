#pragma once

// Runs the real `concord` binary (CONCORD_BINARY, defined for every test target) as a user would,
// for the CLI end-to-end tests. Header-only.

#include <sys/wait.h>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace concord::test {

struct CommandResult {
  int exit_code;       // the process's exit status; -1 if it could not start or did not exit
  std::string output;  // stdout and stderr together
};

// Runs a shell command line (add 2>&1 to capture stderr) and waits for it to exit; exit_code is
// -1 when it was ended by a signal.
inline CommandResult run_shell(const std::string& command) {
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return {-1, "popen failed"};
  std::string output;
  std::array<char, 4096> buffer;
  std::size_t read;
  while ((read = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) output.append(buffer.data(), read);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

// Runs `concord <arguments>` through the shell (so `arguments` is split and quoted as a shell
// would) and waits for it to exit.
// `environment` ("NAME=value ...") is set for this command only.
inline CommandResult run_concord(const std::string& arguments, const std::string& environment = "") {
  return run_shell((environment.empty() ? "" : "env " + environment + " ") + std::string(CONCORD_BINARY) + " " +
                   arguments + " 2>&1");
}

// An empty directory <tmp>/concord_<suite>_<name>, emptied first if it exists. `suite` keeps the
// directories of test executables that run in parallel apart.
inline std::filesystem::path fresh_dir(const std::string& suite, const std::string& name) {
  const auto path = std::filesystem::temp_directory_path() / ("concord_" + suite + "_" + name);
  std::filesystem::remove_all(path);
  std::filesystem::create_directories(path);
  return path;
}

// The directories directly under `root` (the run directories a command made there).
inline std::vector<std::filesystem::path> run_directories(const std::filesystem::path& root) {
  std::vector<std::filesystem::path> found;
  for (const auto& entry : std::filesystem::directory_iterator(root)) {
    if (entry.is_directory()) found.push_back(entry.path());
  }
  return found;
}

// Starts `concord <arguments>` in the background (its output to `output`), waits until a run
// directory under `runs` has a first row in metrics.csv, sends it `signal` (INT, TERM, ...) and
// waits for it to exit. Every wait is bounded (60 s each; then SIGKILL). Returns the shell's
// "exit N\n" line for its status.
inline std::string signal_once_running(const std::string& arguments, const std::filesystem::path& runs,
                                       const std::filesystem::path& output, const std::string& signal) {
  const std::string script = std::string(CONCORD_BINARY) + " " + arguments + " > " + output.string() +
                             " 2>&1 & pid=$!; i=0; " + "until [ -n \"$(cat " + runs.string() +
                             "/*/metrics.csv 2>/dev/null | sed -n 2p)\" ] || [ $i -ge 600 ]; " +
                             "do sleep 0.1; i=$((i+1)); done; kill -" + signal + " $pid; " +
                             "i=0; while kill -0 $pid 2>/dev/null && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; " +
                             "kill -KILL $pid 2>/dev/null; wait $pid; echo \"exit $?\"";
  return run_shell(script).output;
}

// The steps (first column) of a run's metrics.csv, in file order.
inline std::vector<int64_t> csv_steps(const std::filesystem::path& run_dir) {
  std::ifstream csv(run_dir / "metrics.csv");
  std::string line;
  std::getline(csv, line);  // the header
  std::vector<int64_t> steps;
  while (std::getline(csv, line)) steps.push_back(std::stoll(line.substr(0, line.find(','))));
  return steps;
}

// Waits until a run directory under `runs` has `rows` rows in metrics.csv, at most `limit`, and
// says whether it did: a test that must act once training runs waits on this, never on a clock,
// so that a slow start on a loaded machine cannot turn into a different test.
inline bool wait_for_metrics_rows(const std::filesystem::path& runs, size_t rows, std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    for (const auto& run_dir : run_directories(runs)) {
      std::ifstream csv(run_dir / "metrics.csv");
      size_t lines = 0;
      for (std::string line; std::getline(csv, line);) ++lines;
      if (lines > rows) return true;  // the header, then one line per row
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

}  // namespace concord::test
