#pragma once

#include <string>

namespace concord::core {

// LibTorch's CPU matrix products go through whichever BLAS provides libblas.so.3. Debian's
// serial OpenBLAS (libopenblas0-serial) shares unlocked buffers between calls, so two threads
// multiplying at once can get wrong products; the pthread build (libopenblas0-pthread, which
// scripts/setup.sh installs) locks them. Policies and thread groups that run models on several
// threads check for it at start-up.

// The loaded BLAS in words, e.g. "OpenBLAS (serial build)"; "unknown BLAS" when it is not OpenBLAS.
std::string loaded_blas();

// The OpenBLAS kernel set chosen for this CPU (or forced by OPENBLAS_CORETYPE), e.g. "Haswell";
// "unknown" when the BLAS is not OpenBLAS. Kernels round differently, so learning curves differ
// by kernel; tests and benchmarks print it beside their results.
std::string blas_kernel();

// Whether several threads may call the loaded BLAS at once. True for BLAS other than OpenBLAS
// (the reference BLAS and MKL are reentrant).
bool blas_is_thread_safe();

// Throws std::runtime_error, naming `who` and the fix, when the loaded BLAS is not thread-safe.
void require_thread_safe_blas(const std::string& who);

}  // namespace concord::core
