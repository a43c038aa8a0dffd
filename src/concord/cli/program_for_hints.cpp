#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <system_error>

#include "concord/cli/commands.h"

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

}  // namespace concord::cli
