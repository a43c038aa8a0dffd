#include "concord/cli/config_presets.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "concord/core/did_you_mean.h"
#include "concord/core/registry.h"

namespace concord::cli {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> preset_dirs() {
  std::vector<fs::path> dirs;
  std::error_code error;
  const fs::path program = fs::read_symlink("/proc/self/exe", error);
  if (!error) dirs.push_back(program.parent_path().parent_path() / "configs");
#ifdef CONCORD_SOURCE_DIR
  dirs.push_back(fs::path(CONCORD_SOURCE_DIR) / "configs");
#endif
  std::vector<fs::path> existing;
  for (const fs::path& dir : dirs) {
    if (fs::is_directory(dir, error) && std::find(existing.begin(), existing.end(), dir) == existing.end()) {
      existing.push_back(dir);
    }
  }
  return existing;
}

std::string without_toml(const std::string& name) {
  const std::string suffix = ".toml";
  if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
    return name.substr(0, name.size() - suffix.size());
  }
  return name;
}

}  // namespace

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  std::error_code error;
  for (const fs::path& dir : preset_dirs()) {
    for (const fs::directory_entry& entry : fs::directory_iterator(dir, error)) {
      if (entry.path().extension() != ".toml") continue;
      const std::string name = entry.path().stem().string();
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string resolve_config_file(const std::string& text, std::string& error) {
  std::error_code status;
  if (fs::is_regular_file(text, status)) return text;
  if (fs::exists(text, status)) {
    error = "'" + text + "' is not a file";
    return "";
  }
  // A path such as configs/ppo_cartpole.toml written from another folder finds its preset too.
  const std::string name = without_toml(fs::path(text).filename().string());
  for (const fs::path& dir : preset_dirs()) {
    const fs::path preset = dir / (name + ".toml");
    if (fs::is_regular_file(preset, status)) return preset.string();
  }
  const std::vector<std::string> presets = preset_names();
  error = "no file '" + text + "' and no preset of that name";
  const std::vector<std::string> close = core::similar_names(name, presets, 1);
  if (!close.empty()) {
    error += "; did you mean " + close.front() + "?";
  } else if (!presets.empty()) {
    error += " (presets: " + core::joined_names(presets) + ")";
  }
  return "";
}

}  // namespace concord::cli
