#include "concord/view/served_file.h"

#include <system_error>

namespace concord::view {

namespace fs = std::filesystem;

std::optional<fs::path> file_under_root(const fs::path& root, const std::string& relative) {
  if (relative.empty() || relative.front() == '/' || relative.find('\\') != std::string::npos ||
      relative.find('\0') != std::string::npos) {
    return std::nullopt;
  }
  std::size_t start = 0;
  while (start <= relative.size()) {
    const std::size_t slash = std::min(relative.find('/', start), relative.size());
    if (relative.compare(start, slash - start, "..") == 0) return std::nullopt;
    start = slash + 1;
  }
  std::error_code error;
  const fs::path resolved_root = fs::canonical(root, error);
  if (error) return std::nullopt;
  const fs::path resolved = fs::canonical(root / relative, error);
  if (error || !fs::is_regular_file(resolved, error)) return std::nullopt;
  // Under the root: the root's components are a prefix of the file's.
  auto file_part = resolved.begin();
  for (auto root_part = resolved_root.begin(); root_part != resolved_root.end(); ++root_part, ++file_part) {
    if (file_part == resolved.end() || *file_part != *root_part) return std::nullopt;
  }
  return resolved;
}

}  // namespace concord::view
