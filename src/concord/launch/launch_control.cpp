#include "concord/launch/launch_control.h"

#include <cstdlib>
#include <exception>
#include <fstream>
#include <iterator>
#include <string>

#include <spdlog/spdlog.h>

#include "concord/core/atomic_file.h"

namespace concord::launch {
namespace {

constexpr const char* kOtherRanksMayFail = "other-ranks-may-fail\n";

}  // namespace

void declare_other_ranks_may_fail() {
  const char* path = std::getenv(kLaunchControlVariable);
  if (path == nullptr || *path == '\0') return;
  try {
    core::write_file_atomically(path, kOtherRanksMayFail);
  } catch (const std::exception& error) {
    spdlog::warn("cannot tell the launcher that the run survives a failed rank: {}", error.what());
  }
}

bool other_ranks_may_fail(const std::filesystem::path& control_file) {
  std::ifstream in(control_file);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return text == kOtherRanksMayFail;
}

}  // namespace concord::launch
