#pragma once

#include <string>
#include <vector>

namespace concord::cli {

// The config files shipped in configs/ are presets a user names without a path, from anywhere:
// `--config ppo_cartpole` (or ppo_cartpole.toml) is configs/ppo_cartpole.toml. They are found
// beside the program (<program's folder>/../configs, as build/concord finds the source tree's)
// or in the source tree the program was built from.

// The presets' names (file names without .toml), sorted; empty when no configs/ folder is found.
std::vector<std::string> preset_names();

// `text` itself when it names a file; else the preset of that name; else "" and `error` says why
// in one line (no such file or preset, with the presets a typo was closest to).
std::string resolve_config_file(const std::string& text, std::string& error);

}  // namespace concord::cli
