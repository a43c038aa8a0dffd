#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace concord::view {

// The one check between a request's path and the file system: the regular file `relative` names
// under `root`, or nothing when it would lie outside the root or is not a file. Refused: an empty
// or absolute path, a ".." component, a backslash or NUL byte, and a symbolic link anywhere on the
// way that leads out of the root (the resolved path must still be under the resolved root).
std::optional<std::filesystem::path> file_under_root(const std::filesystem::path& root, const std::string& relative);

}  // namespace concord::view
