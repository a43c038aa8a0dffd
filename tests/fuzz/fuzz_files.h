#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace concord::fuzz {

// A directory of this process's own under the system's temporary directory, removed at exit: the
// readers under test take paths, and parallel fuzzing jobs must not share files.
inline const std::filesystem::path& scratch_dir() {
  // Never destroyed, so that the atexit handler can still read it.
  static const auto* dir = [] {
    auto* path = new std::filesystem::path(std::filesystem::temp_directory_path() /
                                           ("concord_fuzz." + std::to_string(::getpid())));
    std::filesystem::create_directories(*path);
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(scratch_dir(), ignored);
    });
    return path;
  }();
  return *dir;
}

// Writes `bytes` to `path` (replacing it) and returns the path.
inline std::filesystem::path write_file(const std::filesystem::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) std::abort();  // a harness fault, not a finding: the reader would test nothing
  return path;
}

}  // namespace concord::fuzz
