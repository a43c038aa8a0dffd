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

// OpenBLAS falls back to its generic kernel set, "Prescott" (SSE3), on a CPU its release does not
// know (0.3.21, Debian 12's, does not know Intel's 2023 Xeons), and matrix products then run
// several times slower than the CPU allows. Where it runs an AVX2 kernel set ("Haswell" or "Zen")
// on a CPU with AVX-512, SkylakeX's are faster, and on the AMD CPU measured the AVX2 ones also
// rounded a row by the size of its batch (bench/RESULTS.md, "Learner micro-benchmarks"). Given
// the chosen kernel set, whether the user forced one
// (OPENBLAS_CORETYPE), and the CPU's vector extensions: the kernel set to force instead
// ("SkylakeX" for AVX-512, "Haswell" for AVX2, "Sandybridge" for AVX), or "" when nothing is
// gained.
std::string faster_blas_kernel(const std::string& chosen, bool forced, bool avx512f, bool avx2, bool avx);

// The same for this process and CPU.
std::string faster_blas_kernel();

// Where faster_blas_kernel() names a kernel set, a program can still get it: OpenBLAS reads
// OPENBLAS_CORETYPE when it is loaded, before main(), so this sets the variable (and
// CONCORD_BLAS_KERNEL_CHOSEN, which blas_kernel_chosen_by_concord() reads) and re-executes the
// program with the same arguments. A user's own OPENBLAS_CORETYPE wins: nothing is done then. Returns
// only when nothing was done or the exec failed; call it first thing in main().
void reexec_with_faster_blas_kernel(char** argv);

// The kernel set reexec_with_faster_blas_kernel() chose for this process (or its parent), or "".
std::string blas_kernel_chosen_by_concord();

// Whether several threads may call the loaded BLAS at once. True for BLAS other than OpenBLAS
// (the reference BLAS and MKL are reentrant).
bool blas_is_thread_safe();

// Throws std::runtime_error, naming `who` and the fix, when the loaded BLAS is not thread-safe.
void require_thread_safe_blas(const std::string& who);

// CBLAS's single-precision matrix product, C = alpha op(A) op(B) + beta C, as the loaded BLAS
// exports it (OpenBLAS and Debian's reference BLAS both do), for code that multiplies small
// matrices often enough that LibTorch's per-operation cost matters (nn/fused_linear_stack.cpp).
// The arguments are CBLAS's: order (101 row-major), transa and transb (111 no, 112 transposed),
// m, n, k, alpha, a, lda, b, ldb, beta, c, ldc. It is the same routine LibTorch's CPU products
// reach, so it computes what they compute.
using CblasSgemm = void (*)(int order, int transa, int transb, int m, int n, int k, float alpha, const float* a,
                            int lda, const float* b, int ldb, float beta, float* c, int ldc);
inline constexpr int kCblasRowMajor = 101;
inline constexpr int kCblasNoTrans = 111;
inline constexpr int kCblasTrans = 112;

// The loaded BLAS's cblas_sgemm, or null when the process has none in its global scope (a
// LibTorch that links MKL privately, as the CUDA builds do); callers then use LibTorch's products.
CblasSgemm cblas_sgemm();

}  // namespace concord::core
