#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <system_error>

#include "concord/cli/commands.h"
#include "concord/launch/launch_control.h"

namespace concord::cli {

std::string program_for_hints() {
  namespace fs = std::filesystem;
  std::error_code error;
  const fs::path program = fs::read_symlink("/proc/self/exe", error);
  if (error) return "concord";
  if (const char* path = std::getenv("PATH")) {
    std::istringstream dirs(path);
    std::string dir;
    while (std::getline(dirs, dir, ':')) {
      if (dir.empty()) continue;
      const fs::path candidate = fs::path(dir) / "concord";
      if (fs::exists(candidate, error) && fs::equivalent(candidate, program, error)) return "concord";
    }
  }
  const fs::path cwd = fs::current_path(error);
  if (!error) {
    const fs::path relative = program.lexically_relative(cwd);
    // A bare name would be looked up on the PATH: "./concord" from the build directory itself.
    if (!relative.empty() && *relative.begin() != "..") {
      return relative.has_parent_path() ? relative.string() : "./" + relative.string();
    }
  }
  return program.string();
}

std::string launcher_for_hints(const std::string& program) {
  if (std::getenv(launch::kLaunchControlVariable) == nullptr) return "";
  const char* local_world_size = std::getenv("LOCAL_WORLD_SIZE");
  const char* nnodes = std::getenv("GROUP_WORLD_SIZE");
  std::string launcher = program + " launch -n " + (local_world_size != nullptr ? local_world_size : "1");
  if (nnodes != nullptr && std::string(nnodes) != "1") {
    launcher += " --nnodes " + std::string(nnodes) + " --node-rank <this node's> --master-addr <rank 0's node>";
  }
  return launcher + " -- ";
}

}  // namespace concord::cli
