#pragma once

#include <string>

namespace concord::core {

// Concord's programs link TCMalloc where it is installed (CMakeLists.txt, CONCORD_TCMALLOC): LibTorch
// allocates and frees many small tensors in each update, and glibc's malloc and free took about a
// tenth of PPO's time on CartPole. Everything below is about glibc's malloc, for the programs
// without it (the Python module, sanitised builds, -DCONCORD_TCMALLOC=OFF); CONCORD_MALLOC is
// still checked in every program.
//
// LibTorch allocates every tensor with the C library's malloc. With glibc's defaults, a buffer
// above the mmap threshold (128 KiB, raised as big buffers are freed) gets fresh pages from the
// kernel, and a freed heap top above the trim threshold is handed back to it: the next update's
// activations, gradients and optimiser temporaries then page-fault again, page by page. On the
// pixel workloads (PPO on MinAtar) that costs a noticeable share of the wall time
// (bench/allocator.sh; bench/RESULTS.md, "Memory"). When this library is loaded, before main(),
// Concord keeps freed memory for reuse instead (kMmapThresholdBytes, kTrimThresholdBytes), for
// every program it links: the CLI, the benchmarks, the tests and Python's training module (the
// torch-free concord._envs does not link this object).
//
// Left alone when the user chose malloc settings: GLIBC_TUNABLES naming glibc.malloc, or
// MALLOC_MMAP_THRESHOLD_ / MALLOC_TRIM_THRESHOLD_ set. CONCORD_MALLOC=default also keeps glibc's
// defaults (the baseline bench/allocator.sh compares against); CONCORD_MALLOC=concord (or unset)
// is the setting above. Any other value ends the process with one line on stderr and status 1.
inline constexpr long kMmapThresholdBytes = 16L << 20;  // buffers above 16 MiB still come from mmap
inline constexpr long kTrimThresholdBytes = 64L << 20;  // up to 64 MiB of free heap top is kept

// What the load-time setting did, in words, e.g. "tcmalloc (keeps freed memory in its own caches)",
// "malloc keeps freed memory (mmap threshold 16 MiB, trim threshold 64 MiB)" or "glibc malloc as
// the user set it (CONCORD_MALLOC=default)". For logs beside timings.
std::string allocator_settings();

// Whether this program runs TCMalloc.
bool tcmalloc_linked();

// Heap bytes the program's allocations hold now, from whichever malloc it runs (TCMalloc's count,
// or glibc's mallinfo2, which knows nothing of TCMalloc's heap).
double heap_bytes_in_use();

}  // namespace concord::core
