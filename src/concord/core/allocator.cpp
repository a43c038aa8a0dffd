#include "concord/core/allocator.h"

#include <malloc.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

// Defined by TCMalloc (gperftools), where a program links it (CMakeLists.txt, CONCORD_TCMALLOC);
// null otherwise.
extern "C" const char* tc_version(int* major, int* minor, const char** patch) __attribute__((weak));
extern "C" int MallocExtension_GetNumericProperty(const char* property, size_t* value) __attribute__((weak));

namespace concord::core {
namespace {

std::string& settings() {
  static std::string text = "glibc malloc defaults (not configured)";
  return text;
}

// Why a user's own malloc settings win, or "" when there are none.
std::string user_choice() {
  if (const char* mode = std::getenv("CONCORD_MALLOC"); mode != nullptr && *mode != '\0') {
    if (std::strcmp(mode, "default") == 0) return "CONCORD_MALLOC=default";
    if (std::strcmp(mode, "concord") != 0) {
      // Before main(), in every program and the Python module: no exception can be caught here,
      // so the one line and the exit status are written directly.
      std::fprintf(stderr, "concord: CONCORD_MALLOC='%s' is not understood (known: concord, default)\n", mode);
      std::_Exit(1);
    }
  }
  if (const char* tunables = std::getenv("GLIBC_TUNABLES");
      tunables != nullptr && std::strstr(tunables, "glibc.malloc.") != nullptr) {
    return "GLIBC_TUNABLES";
  }
  if (std::getenv("MALLOC_MMAP_THRESHOLD_") != nullptr || std::getenv("MALLOC_TRIM_THRESHOLD_") != nullptr) {
    return "MALLOC_*_THRESHOLD_";
  }
  return "";
}

struct KeepFreedMemory {
  KeepFreedMemory() {
    const std::string choice = user_choice();  // checks CONCORD_MALLOC in every program
    if (tcmalloc_linked()) {
      settings() = "tcmalloc (keeps freed memory in its own caches)";
      return;
    }
    if (!choice.empty()) {
      settings() = "glibc malloc as the user set it (" + choice + ")";
      return;
    }
    // Both are needed: the mmap threshold alone still lets the heap top be trimmed, and the trim
    // threshold alone still maps big buffers afresh. Setting either turns off glibc's own
    // adjustment of both.
    const bool mmap_set = mallopt(M_MMAP_THRESHOLD, static_cast<int>(kMmapThresholdBytes)) == 1;
    const bool trim_set = mallopt(M_TRIM_THRESHOLD, static_cast<int>(kTrimThresholdBytes)) == 1;
    settings() = mmap_set && trim_set
                     ? "malloc keeps freed memory (mmap threshold " + std::to_string(kMmapThresholdBytes >> 20) +
                           " MiB, trim threshold " + std::to_string(kTrimThresholdBytes >> 20) + " MiB)"
                     : "glibc malloc defaults (mallopt refused the thresholds)";
  }
};
const KeepFreedMemory keep_freed_memory;

}  // namespace

// Keeps this object, and the initialiser above, in every program linked with concord_core
// (CMakeLists.txt: --undefined), as concord_blas_threads_anchor does for blas.cpp.
extern "C" {
extern const int concord_allocator_anchor;
const int concord_allocator_anchor = 1;
}

std::string allocator_settings() { return settings(); }

bool tcmalloc_linked() { return tc_version != nullptr; }

double heap_bytes_in_use() {
  if (tcmalloc_linked() && MallocExtension_GetNumericProperty != nullptr) {
    size_t bytes = 0;
    if (MallocExtension_GetNumericProperty("generic.current_allocated_bytes", &bytes) != 0) {
      return static_cast<double>(bytes);
    }
  }
  const struct mallinfo2 info = mallinfo2();  // glibc's: small blocks and mmapped ones
  return static_cast<double>(info.uordblks) + static_cast<double>(info.hblkhd);
}

}  // namespace concord::core
