#include "concord/launch/launch_control.h"

#include <cstdlib>
#include <exception>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "concord/core/atomic_file.h"

namespace concord::launch {
namespace {

constexpr const char* kOtherRanksMayFail = "other-ranks-may-fail";
constexpr const char* kRunDir = "run-dir ";
// Beside the control file: "stalled-by-<rank>", lines "<stalled rank> <collective>".
constexpr const char* kStalledBy = "stalled-by-";

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

void declare_stalled_ranks(int declaring_rank, const std::vector<int>& stalled, int64_t collective) {
  const std::string path = control_file();
  if (path.empty()) return;
  try {
    std::string text;
    for (const int rank : stalled) text += std::to_string(rank) + " " + std::to_string(collective) + "\n";
    core::write_file_atomically(
        std::filesystem::path(path).parent_path() / (kStalledBy + std::to_string(declaring_rank)), text);
  } catch (const std::exception& error) {
    spdlog::warn("cannot tell the launcher which ranks stalled: {}", error.what());
  }
}

std::string read_stalled_ranks(const std::filesystem::path& control_file) {
  // By stalled rank: the first declaring rank and its collective.
  std::map<int, std::pair<int, int64_t>> stalled;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(control_file.parent_path(), error)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(kStalledBy, 0) != 0) continue;
    int declaring = 0;
    try {
      declaring = std::stoi(name.substr(std::string(kStalledBy).size()));
    } catch (const std::exception&) {
      continue;
    }
    std::ifstream in(entry.path());
    int rank = 0;
    int64_t collective = 0;
    while (in >> rank >> collective) stalled.emplace(rank, std::make_pair(declaring, collective));
  }
  std::string text;
  for (const auto& [rank, found] : stalled) {
    text += std::string(text.empty() ? " (" : "; ") + "rank " + std::to_string(rank) + " stalled: rank " +
            std::to_string(found.first) + " timed out at collective " + std::to_string(found.second) + ", which rank " +
            std::to_string(rank) + " never reached";
  }
  return text.empty() ? text : text + "; the likelier cause)";
}

void clear_stalled_ranks(const std::filesystem::path& control_file) {
  std::error_code error;
  std::vector<std::filesystem::path> found;
  for (const auto& entry : std::filesystem::directory_iterator(control_file.parent_path(), error)) {
    if (entry.path().filename().string().rfind(kStalledBy, 0) == 0) found.push_back(entry.path());
  }
  for (const auto& path : found) std::filesystem::remove(path, error);
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
