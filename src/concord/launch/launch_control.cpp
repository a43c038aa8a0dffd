#include "concord/launch/launch_control.h"

#include <cstdlib>
#include <exception>
#include <fstream>
#include <sstream>
#include <string>

#include <spdlog/spdlog.h>

#include "concord/core/atomic_file.h"

namespace concord::launch {
namespace {

constexpr const char* kOtherRanksMayFail = "other-ranks-may-fail";
constexpr const char* kRunDir = "run-dir ";

std::string control_file() {
  const char* path = std::getenv(kLaunchControlVariable);
  return path == nullptr ? std::string() : std::string(path);
}

// Rewrites the whole file with `control`: only rank 0 writes it, from one thread.
void write_launch_control(const std::string& path, const LaunchControl& control) {
  std::string text;
  if (control.other_ranks_may_fail) text += std::string(kOtherRanksMayFail) + "\n";
  if (!control.run_dir.empty()) text += kRunDir + control.run_dir + "\n";
  core::write_file_atomically(path, text);
}

}  // namespace

void declare_other_ranks_may_fail() {
  const std::string path = control_file();
  if (path.empty()) return;
  try {
    LaunchControl control = read_launch_control(path);
    control.other_ranks_may_fail = true;
    write_launch_control(path, control);
  } catch (const std::exception& error) {
    spdlog::warn("cannot tell the launcher that the run survives a failed rank: {}", error.what());
  }
}

void declare_run_dir(const std::filesystem::path& run_dir) {
  const std::string path = control_file();
  if (path.empty()) return;
  try {
    LaunchControl control = read_launch_control(path);
    control.run_dir = std::filesystem::absolute(run_dir).string();
    write_launch_control(path, control);
  } catch (const std::exception& error) {
    spdlog::warn("cannot tell the launcher the run directory (a restart would start afresh): {}", error.what());
  }
}

LaunchControl read_launch_control(const std::filesystem::path& control_file) {
  LaunchControl control;
  std::ifstream in(control_file);
  std::string line;
  while (std::getline(in, line)) {
    if (line == kOtherRanksMayFail) {
      control.other_ranks_may_fail = true;
    } else if (line.rfind(kRunDir, 0) == 0) {
      control.run_dir = line.substr(std::string(kRunDir).size());
    }
  }
  return control;
}

std::string restart_run_dir() {
  const char* dir = std::getenv(kRestartRunDirVariable);
  return dir == nullptr ? std::string() : std::string(dir);
}

}  // namespace concord::launch
