#include "concord/core/blas.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <stdexcept>

namespace concord::core {
namespace {

// OpenBLAS's own queries, looked up at run time: Concord does not link OpenBLAS itself, LibTorch
// does, through whichever build the system's alternatives chose.
using GetParallel = int (*)();
using SetNumThreads = void (*)(int);
using GetCoreName = char* (*)();

GetParallel openblas_get_parallel() {
  return reinterpret_cast<GetParallel>(dlsym(RTLD_DEFAULT, "openblas_get_parallel"));
}

// Concord owns its threads (env workers, actor-learners, ranks): a threaded OpenBLAS would start
// its own on top and oversubscribe the cores. One BLAS thread per calling thread, unless the user
// asked for more with OPENBLAS_NUM_THREADS. Runs when this library is loaded, before main(), so
// every program that can check the BLAS (the CLI, tests, benchmarks) computes the same way.
struct OneBlasThreadPerCaller {
  OneBlasThreadPerCaller() {
    if (std::getenv("OPENBLAS_NUM_THREADS") != nullptr) return;
    if (auto set_threads = reinterpret_cast<SetNumThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) {
      set_threads(1);
    }
  }
};
const OneBlasThreadPerCaller one_blas_thread_per_caller;

}  // namespace

// A symbol every program is linked with (CMakeLists.txt: --undefined on concord_core), so that
// this object and the initialiser above are kept even in a program that never asks about the
// BLAS: from a static library the linker keeps only objects something refers to.
extern "C" {
extern const int concord_blas_threads_anchor;
const int concord_blas_threads_anchor = 1;
}

std::string loaded_blas() {
  const GetParallel get_parallel = openblas_get_parallel();
  if (get_parallel == nullptr) return "unknown BLAS";
  switch (get_parallel()) {
    case 0:
      return "OpenBLAS (serial build)";
    case 1:
      return "OpenBLAS (pthread build)";
    case 2:
      return "OpenBLAS (OpenMP build)";
    default:
      return "OpenBLAS (unknown build)";
  }
}

std::string blas_kernel() {
  const auto get_core_name = reinterpret_cast<GetCoreName>(dlsym(RTLD_DEFAULT, "openblas_get_corename"));
  if (get_core_name == nullptr) return "unknown";
  const char* name = get_core_name();
  return name == nullptr ? "unknown" : name;
}

std::string faster_blas_kernel(const std::string& chosen, bool forced, bool avx512f, bool avx2, bool avx) {
  if (forced) return "";
  if (chosen == "Prescott") {
    if (avx512f) return "SkylakeX";
    if (avx2) return "Haswell";
    if (avx) return "Sandybridge";
    return "";
  }
  if (avx512f && (chosen == "Haswell" || chosen == "Zen")) return "SkylakeX";
  return "";
}

std::string faster_blas_kernel() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  return faster_blas_kernel(blas_kernel(), std::getenv("OPENBLAS_CORETYPE") != nullptr,
                            __builtin_cpu_supports("avx512f"), __builtin_cpu_supports("avx2"),
                            __builtin_cpu_supports("avx"));
#else
  return "";
#endif
}

void reexec_with_faster_blas_kernel(char** argv) {
  const std::string faster = faster_blas_kernel();
  if (faster.empty()) return;
  setenv("OPENBLAS_CORETYPE", faster.c_str(), 1);
  setenv("CONCORD_BLAS_KERNEL_CHOSEN", faster.c_str(), 1);
  execv("/proc/self/exe", argv);
  // The exec failed: run on with the kernels OpenBLAS chose, and do not pretend otherwise.
  unsetenv("OPENBLAS_CORETYPE");
  unsetenv("CONCORD_BLAS_KERNEL_CHOSEN");
}

std::string blas_kernel_chosen_by_concord() {
  const char* chosen = std::getenv("CONCORD_BLAS_KERNEL_CHOSEN");
  const char* forced = std::getenv("OPENBLAS_CORETYPE");
  // Only while the variable still holds what Concord set (a user may set another below it).
  if (chosen == nullptr || forced == nullptr || std::string(chosen) != forced) return "";
  return chosen;
}

bool blas_is_thread_safe() {
  const GetParallel get_parallel = openblas_get_parallel();
  return get_parallel == nullptr || get_parallel() != 0;
}

void require_thread_safe_blas(const std::string& who) {
  if (blas_is_thread_safe()) return;
  throw std::runtime_error(who + " runs models on several threads, but the loaded BLAS, " + loaded_blas() +
                           ", gives wrong products when threads call it at once; install libopenblas0-pthread "
                           "(bash scripts/setup.sh does)");
}

CblasSgemm cblas_sgemm() {
  static const auto function = reinterpret_cast<CblasSgemm>(dlsym(RTLD_DEFAULT, "cblas_sgemm"));
  return function;
}

}  // namespace concord::core
