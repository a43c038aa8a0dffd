#include "concord/core/blas.h"

#include <dlfcn.h>

#include <atomic>
#include <cctype>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace concord::core {
namespace {

void* openblas_get_parallel_symbol() { return dlsym(RTLD_DEFAULT, "openblas_get_parallel"); }

// The failure this guards against: with Debian's serial OpenBLAS, three threads multiplying the
// same small matrices got a few hundred wrong products in 60,000 (thread ranks then trained
// replicas on corrupted gradients). With a thread-safe BLAS every product is bit-exact.
TEST(Blas, ConcurrentMatrixProductsAreExact) {
  ASSERT_TRUE(blas_is_thread_safe()) << loaded_blas() << " is loaded; run scripts/setup.sh";
  torch::manual_seed(1);
  const torch::Tensor a = torch::randn({7, 16});
  const torch::Tensor b = torch::randn({16, 6});
  const torch::Tensor c = torch::randn({16, 7});
  const torch::Tensor ab = torch::mm(a, b);
  const torch::Tensor ca = torch::mm(c, a);
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 5000; ++i) {
        if (!torch::equal(torch::mm(a, b), ab)) ++wrong;
        if (!torch::equal(torch::mm(c, a), ca)) ++wrong;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(wrong.load(), 0);
}

// Concord owns its threads: OpenBLAS runs one thread per caller unless OPENBLAS_NUM_THREADS says.
TEST(Blas, OpenBlasRunsOneThreadPerCaller) {
  using GetNumThreads = int (*)();
  const auto get_num_threads = reinterpret_cast<GetNumThreads>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  if (get_num_threads == nullptr) GTEST_SKIP() << "the loaded BLAS is not OpenBLAS: " << loaded_blas();
  if (std::getenv("OPENBLAS_NUM_THREADS") != nullptr) GTEST_SKIP() << "OPENBLAS_NUM_THREADS is set";
  EXPECT_EQ(get_num_threads(), 1);
}

// The kernel set is what makes learning curves differ between machines; OPENBLAS_CORETYPE forces
// one, which is how scripts/kernel_check.sh runs the learning tests under other kernels.
TEST(Blas, KernelIsTheOneOpenBlasChoseOrWasTold) {
  if (openblas_get_parallel_symbol() == nullptr) GTEST_SKIP() << "the loaded BLAS is not OpenBLAS: " << loaded_blas();
  const std::string kernel = blas_kernel();
  EXPECT_NE(kernel, "unknown");
  EXPECT_FALSE(kernel.empty());
  if (const char* forced = std::getenv("OPENBLAS_CORETYPE")) {
    std::string lower_kernel = kernel;
    std::string lower_forced = forced;
    for (char& c : lower_kernel) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (char& c : lower_forced) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    EXPECT_EQ(lower_kernel, lower_forced);
  }
}

// Only OpenBLAS's generic fallback, on a CPU with wider vectors and no kernel forced, asks for a
// faster kernel set: the widest the CPU runs.
TEST(Blas, FasterKernelOnlyReplacesTheGenericFallback) {
  EXPECT_EQ(faster_blas_kernel("Prescott", false, true, true, true), "SkylakeX");
  EXPECT_EQ(faster_blas_kernel("Prescott", false, false, true, true), "Haswell");
  EXPECT_EQ(faster_blas_kernel("Prescott", false, false, false, true), "Sandybridge");
  EXPECT_EQ(faster_blas_kernel("Prescott", false, false, false, false), "");
  EXPECT_EQ(faster_blas_kernel("Prescott", true, true, true, true), "");
  EXPECT_EQ(faster_blas_kernel("SkylakeX", false, true, true, true), "");
  // An AVX-512 CPU that OpenBLAS took for an AVX2 one (AMD's Zen 4 and 5).
  EXPECT_EQ(faster_blas_kernel("Haswell", false, true, true, true), "SkylakeX");
  EXPECT_EQ(faster_blas_kernel("Zen", false, true, true, true), "SkylakeX");
  EXPECT_EQ(faster_blas_kernel("Haswell", true, true, true, true), "");
  EXPECT_EQ(faster_blas_kernel("Haswell", false, false, true, true), "");
  EXPECT_EQ(faster_blas_kernel("unknown", false, true, true, true), "");
}

// The CBLAS product Concord's fused layers call: present under Debian's BLAS (OpenBLAS and the
// reference both export it), with CBLAS's row-major and transposition codes. Small integers, so
// every product is exact: [[1, 2], [3, 4]] x [[5, 6], [7, 8]] and the transposed forms.
TEST(Blas, CblasSgemmMultipliesRowMajorMatrices) {
  const CblasSgemm sgemm = cblas_sgemm();
  ASSERT_NE(sgemm, nullptr) << loaded_blas() << " exports no cblas_sgemm";
  const float a[] = {1, 2, 3, 4};
  const float b[] = {5, 6, 7, 8};
  float c[] = {1, 1, 1, 1};
  sgemm(kCblasRowMajor, kCblasNoTrans, kCblasNoTrans, 2, 2, 2, 1.0F, a, 2, b, 2, 0.0F, c, 2);
  EXPECT_EQ(std::vector<float>(c, c + 4), (std::vector<float>{19, 22, 43, 50}));
  // A B^T, plus beta C: [[17, 23], [39, 53]] + [[19, 22], [43, 50]].
  sgemm(kCblasRowMajor, kCblasNoTrans, kCblasTrans, 2, 2, 2, 1.0F, a, 2, b, 2, 1.0F, c, 2);
  EXPECT_EQ(std::vector<float>(c, c + 4), (std::vector<float>{36, 45, 82, 103}));
  // A^T B, alpha 2: 2 [[26, 30], [38, 44]].
  sgemm(kCblasRowMajor, kCblasTrans, kCblasNoTrans, 2, 2, 2, 2.0F, a, 2, b, 2, 0.0F, c, 2);
  EXPECT_EQ(std::vector<float>(c, c + 4), (std::vector<float>{52, 60, 76, 88}));
}

}  // namespace
}  // namespace concord::core
