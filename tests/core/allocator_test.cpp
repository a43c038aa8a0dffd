#include "concord/core/allocator.h"

#include <malloc.h>
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace concord::core {
namespace {

bool user_chose_malloc_settings() { return allocator_settings().rfind("glibc malloc as the user set it", 0) == 0; }

long minor_page_faults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

// One training-step-like round: eight 4 MiB tensors written and freed, as an update's
// activations and gradients are. Returns the page faults of the last of 12 rounds (LibTorch's
// 64-byte aligned allocations fragment the heap for the first few).
long page_faults_of_a_repeated_round() {
  long faults = 0;
  for (int round = 0; round < 12; ++round) {
    const long before = minor_page_faults();
    {
      std::vector<torch::Tensor> buffers;
      for (int i = 0; i < 8; ++i) buffers.push_back(torch::ones({1 << 20}));  // 4 MiB of floats
    }
    faults = minor_page_faults() - before;
  }
  return faults;
}

TEST(Allocator, TheLibrarySetsTheThresholdsWhenItLoads) {
  if (tcmalloc_linked()) {
    EXPECT_EQ(allocator_settings(), "tcmalloc (keeps freed memory in its own caches)");
    return;
  }
  if (user_chose_malloc_settings()) GTEST_SKIP() << allocator_settings();
  EXPECT_EQ(allocator_settings(), "malloc keeps freed memory (mmap threshold 16 MiB, trim threshold 64 MiB)");
}

// 32 MiB written per round is 8,192 pages. Kept memory is reused without asking the kernel again,
// by TCMalloc where it is linked or by glibc's malloc with Concord's thresholds; with glibc's default thresholds
// (restored here for the comparison) each round faults most of them back in.
TEST(Allocator, FreedTensorsAreReusedWithoutNewPageFaults) {
  if (user_chose_malloc_settings()) GTEST_SKIP() << allocator_settings();
  const long kept = page_faults_of_a_repeated_round();
  EXPECT_LT(kept, 100);
  if (tcmalloc_linked()) return;  // TCMalloc's caches; glibc's thresholds do not apply

  ASSERT_EQ(mallopt(M_MMAP_THRESHOLD, 128 * 1024), 1);
  ASSERT_EQ(mallopt(M_TRIM_THRESHOLD, 128 * 1024), 1);
  const long with_defaults = page_faults_of_a_repeated_round();
  ASSERT_EQ(mallopt(M_MMAP_THRESHOLD, static_cast<int>(kMmapThresholdBytes)), 1);
  ASSERT_EQ(mallopt(M_TRIM_THRESHOLD, static_cast<int>(kTrimThresholdBytes)), 1);
  // 7,175 here; fewer where transparent huge pages are always on (one fault per 2 MiB).
  EXPECT_GT(with_defaults, kept);
  std::printf("page faults of one round: %ld with Concord's thresholds, %ld with glibc's\n", kept, with_defaults);
}

}  // namespace
}  // namespace concord::core
