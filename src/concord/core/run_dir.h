#pragma once

#include <filesystem>
#include <string>

namespace concord::core {

// Creates a fresh directory for one run, `root/<name>__<YYYYmmdd-HHMMSS>`, adding a numeric
// suffix if that already exists (two runs started in the same second never share one).
// Path separators in `name` become '_' ("MinAtar/Breakout-v1" gives one folder,
// "MinAtar_Breakout-v1__..."). Throws std::runtime_error naming the path if it cannot be created.
std::filesystem::path create_run_dir(const std::filesystem::path& root, const std::string& name);

}  // namespace concord::core
