#include "concord/core/torch_thread.h"

#include <atomic>
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

}  // namespace concord::core
