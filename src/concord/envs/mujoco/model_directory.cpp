#include "concord/envs/mujoco/model_directory.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <system_error>
#include <vector>

namespace concord::envs::mujoco {
namespace fs = std::filesystem;
namespace {

// The file this function's code was loaded from: the program, or a shared library (the Python
// module) whose process is some interpreter.
fs::path this_binary() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&this_binary), &info) != 0 && info.dli_fname != nullptr) {
    std::error_code error;
    fs::path path = fs::canonical(info.dli_fname, error);
    if (!error) return path;
  }
  std::error_code error;
  return fs::read_symlink("/proc/self/exe", error);
}

std::vector<fs::path> candidate_directories() {
  std::vector<fs::path> dirs;
  if (const char* dir = std::getenv("CONCORD_MUJOCO_MODEL_DIR"); dir != nullptr && *dir != '\0') dirs.emplace_back(dir);
  // build/concord, build/tests/x, build/bench/x, build/python/concord/_envs.so: up to four levels.
  fs::path dir = this_binary().parent_path();
  for (int level = 0; level < 4 && !dir.empty(); ++level, dir = dir.parent_path()) {
    dirs.push_back(dir / "assets" / "mujoco");
    if (dir == dir.parent_path()) break;
  }
#ifdef CONCORD_SOURCE_DIR
  dirs.push_back(fs::path(CONCORD_SOURCE_DIR) / "assets" / "mujoco");
#endif
  return dirs;
}

}  // namespace

std::string shipped_model(const std::string& file) {
  std::string tried;
  for (const fs::path& dir : candidate_directories()) {
    std::error_code error;
    if (fs::is_regular_file(dir / file, error)) return (dir / file).string();
    tried += (tried.empty() ? "" : ", ") + dir.string();
  }
  throw std::runtime_error("the shipped MuJoCo model " + file + " is in none of " + tried +
                           " (set CONCORD_MUJOCO_MODEL_DIR to the folder that holds it, or env.model_file)");
}

}  // namespace concord::envs::mujoco
