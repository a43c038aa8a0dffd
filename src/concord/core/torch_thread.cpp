#include "concord/core/torch_thread.h"

#if defined(__SSE__)
#include <xmmintrin.h>
#endif

#include <atomic>
#include <mutex>
#include <utility>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <ATen/Parallel.h>

#include "concord/core/rng.h"

namespace concord::core {
namespace {

thread_local c10::optional<at::Generator> current_generator;
// What set_flush_denormals last chose, for the threads started after it.
std::atomic<bool> flush_denormals{false};

}  // namespace

std::thread torch_thread(std::function<void()> body) {
  return std::thread([body = std::move(body)] {
    // Copies the count set by at::set_num_threads into this thread's OpenMP settings.
    at::init_num_threads();
    at::globalContext().setFlushDenormal(flush_denormals.load());
    body();
  });
}

void set_flush_denormals(bool flush) {
  flush_denormals.store(flush);
  at::globalContext().setFlushDenormal(flush);
}

bool flushing_denormals() {
#if defined(__SSE__)
  // MXCSR's flush-to-zero and denormals-are-zero bits, both of which set_flush_denormal sets.
  constexpr unsigned int kFlushToZero = 0x8000;
  constexpr unsigned int kDenormalsAreZero = 0x0040;
  return (_mm_getcsr() & (kFlushToZero | kDenormalsAreZero)) == (kFlushToZero | kDenormalsAreZero);
#else
  return false;
#endif
}

RestoreFlushDenormals::RestoreFlushDenormals()
    : thread_(flushing_denormals()), later_threads_(flush_denormals.load()) {}

RestoreFlushDenormals::~RestoreFlushDenormals() {
  flush_denormals.store(later_threads_);
  at::globalContext().setFlushDenormal(thread_);
}

uint64_t thread_seed(uint64_t run_seed, uint64_t index) { return derive_seed(run_seed, 0x7E000 + index); }

std::thread torch_thread(uint64_t seed, std::function<void()> body) {
  return torch_thread([seed, body = std::move(body)] {
    ScopedThreadGenerator generator(seed);
    body();
  });
}

std::thread torch_thread(at::Generator generator, std::function<void()> body) {
  return torch_thread([generator = std::move(generator), body = std::move(body)] {
    ScopedThreadGenerator scoped(generator);
    body();
  });
}

c10::optional<at::Generator> thread_generator(const c10::Device& device) {
  if (!device.is_cpu()) return c10::nullopt;
  return current_generator;
}

ScopedThreadGenerator::ScopedThreadGenerator(uint64_t seed) : previous_(std::move(current_generator)) {
  current_generator = at::make_generator<at::CPUGeneratorImpl>(seed);
}

ScopedThreadGenerator::ScopedThreadGenerator(at::Generator generator) : previous_(std::move(current_generator)) {
  current_generator = std::move(generator);
}

ScopedThreadGenerator::~ScopedThreadGenerator() { current_generator = std::move(previous_); }

at::Generator copy_of_process_generator() {
  at::Generator process = at::detail::getDefaultCPUGenerator();  // a handle on the one generator
  std::lock_guard<std::mutex> lock(process.mutex());
  return process.clone();
}

}  // namespace concord::core
