#pragma once

#include <cstdint>
#include <functional>
#include <thread>

#include <ATen/core/Generator.h>
#include <c10/core/Device.h>
#include <c10/util/Optional.h>

namespace concord::core {

// Starts a thread that runs LibTorch operators with the process's intra-op thread count
// (torch::set_num_threads, run.torch_threads). Debian's LibTorch is built with OpenMP, which keeps
// that count per thread: a plain std::thread would run every convolution on all cores, so N
// agent or worker threads would start N x cores OpenMP threads and fight over the cores (with
// MinAtar's network, per-thread act() rates then scattered widely). Every thread of ours that
// runs LibTorch starts here.
std::thread torch_thread(std::function<void()> body);

// Whether the calling thread, and every torch_thread started afterwards, computes with floats below
// 1.2e-38 (denormals) flushed to zero: the CPU's FTZ and DAZ modes, LibTorch's
// set_flush_denormal, which holds per thread. Why: Adam's moments of a parameter whose gradient
// stays 0 (a dead ReLU unit's weights) decay into denormals and stay there, as 0.9 times the
// smallest denormal rounds back to it, and the CPU takes a slow path on every operation that
// meets one (Adam's step over a CartPole Q-network, `micro_dqn_step --benchmark_filter=Adam`:
// bench/RESULTS.md, "Learner micro-benchmarks"). Nothing else changes: values that small are zero
// to any network. Off by default, as in LibTorch; run.flush_denormals (on by default) sets it for
// training.
void set_flush_denormals(bool flush);

// Whether the calling thread flushes denormals (false where the CPU has no such mode).
bool flushing_denormals();

// Restores, when destroyed, the denormal mode that the calling thread and later torch_threads had
// when it was made: for callers that run training on a thread of their own, such as a Python
// interpreter's, whose arithmetic must not change after concord.train returns.
class RestoreFlushDenormals {
 public:
  RestoreFlushDenormals();
  ~RestoreFlushDenormals();
  RestoreFlushDenormals(const RestoreFlushDenormals&) = delete;
  RestoreFlushDenormals& operator=(const RestoreFlushDenormals&) = delete;

 private:
  bool thread_;
  bool later_threads_;
};

// The same, with a random generator of the thread's own seeded with `seed` (see thread_generator):
// for every thread that draws random numbers (action sampling, minibatch permutations), with
// seed = thread_seed(run seed, i) for the i-th such thread of a run.
std::thread torch_thread(uint64_t seed, std::function<void()> body);

// The generator seed of a run's thread `index`: derive_seed(run_seed, 0x7E000 + index), a block of
// streams apart from the small stream numbers components use for their envs and schedules.
uint64_t thread_seed(uint64_t run_seed, uint64_t index);

// The same, drawing from `generator` (which the thread then owns): a thread that continues a
// stream another began, e.g. the one predictor of a central_inference run continues the process
// generator's, so that it draws what `single` would have drawn on the main thread.
std::thread torch_thread(at::Generator generator, std::function<void()> body);

// A copy of the process-wide CPU generator as it stands now: what such a thread continues.
at::Generator copy_of_process_generator();

// The generator the calling thread draws with on `device`. LibTorch's random operators share one
// process-wide generator unless handed another, so threads drawing from it at once make every
// draw depend on how the scheduler interleaved them, and no run could be replayed. A thread
// started with a seed has its own CPU generator, and every random draw of ours passes
// thread_generator(device) to the operator:
//
//   at::randperm(n, core::thread_generator(at::kCPU), at::kLong)
//
// nullopt (the global generator, which torch::manual_seed seeds) on a thread started without a
// seed, such as the main thread, and for CUDA tensors, whose draws use the device's generator.
c10::optional<at::Generator> thread_generator(const c10::Device& device);

// Gives the calling thread its own generator, seeded with `seed`, until destroyed (then the one it
// had before): what torch_thread(seed, body) does around body.
class ScopedThreadGenerator {
 public:
  explicit ScopedThreadGenerator(uint64_t seed);
  explicit ScopedThreadGenerator(at::Generator generator);
  ~ScopedThreadGenerator();
  ScopedThreadGenerator(const ScopedThreadGenerator&) = delete;
  ScopedThreadGenerator& operator=(const ScopedThreadGenerator&) = delete;

 private:
  c10::optional<at::Generator> previous_;
};

}  // namespace concord::core
