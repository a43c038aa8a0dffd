#include "concord/core/run_dir.h"

#include <ctime>
#include <stdexcept>
#include <system_error>

namespace concord::core {

std::filesystem::path create_run_dir(const std::filesystem::path& root, const std::string& name) {
  std::error_code error;
  std::filesystem::create_directories(root, error);
  if (error) {
    throw std::runtime_error("cannot create run root '" + root.string() + "': " + error.message());
  }
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &local);
  // An env id such as "MinAtar/Breakout-v1" names one folder, not two.
  std::string flat = name;
  for (char& c : flat) {
    if (c == '/' || c == '\\') c = '_';
  }
  const std::string base = flat + "__" + stamp;
  for (int attempt = 0; attempt < 1000; ++attempt) {
    const std::filesystem::path candidate = root / (attempt == 0 ? base : base + "-" + std::to_string(attempt));
    // create_directory is atomic: exactly one concurrent caller gets `true` for a path.
    if (std::filesystem::create_directory(candidate, error)) return candidate;
    if (error) {
      throw std::runtime_error("cannot create run directory '" + candidate.string() + "': " + error.message());
    }
  }
  throw std::runtime_error("cannot create a unique run directory under '" + root.string() + "'");
}

}  // namespace concord::core
