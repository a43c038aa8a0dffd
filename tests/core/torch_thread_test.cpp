// Threads started with a seed draw from generators of their own: their draws depend on the seed
// alone, however the threads interleave, and never touch the global generator.
#include "concord/core/torch_thread.h"

#include <limits>
#include <vector>

#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

namespace concord::core {
namespace {

torch::Tensor permutation_on_thread(uint64_t seed) {
  torch::Tensor drawn;
  std::thread thread = torch_thread(seed, [&] { drawn = at::randperm(1000, thread_generator(at::kCPU), at::kLong); });
  thread.join();
  return drawn;
}

TEST(ThreadGenerator, ASeededThreadDrawsWhatItsSeedSays) {
  const torch::Tensor expected = at::randperm(1000, at::make_generator<at::CPUGeneratorImpl>(uint64_t{42}), at::kLong);
  EXPECT_TRUE(torch::equal(permutation_on_thread(42), expected));
  EXPECT_FALSE(torch::equal(permutation_on_thread(43), expected));
}

TEST(ThreadGenerator, ThreadsDrawingAtOnceDoNotDisturbEachOther) {
  constexpr int kThreads = 4;
  std::vector<torch::Tensor> drawn(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.push_back(torch_thread(static_cast<uint64_t>(i), [&drawn, i] {
      std::vector<torch::Tensor> parts;
      for (int k = 0; k < 200; ++k) parts.push_back(torch::rand({5}, thread_generator(at::kCPU)));
      drawn[static_cast<size_t>(i)] = torch::cat(parts);
    }));
  }
  for (std::thread& thread : threads) thread.join();
  for (int i = 0; i < kThreads; ++i) {
    auto alone = at::make_generator<at::CPUGeneratorImpl>(static_cast<uint64_t>(i));
    std::vector<torch::Tensor> parts;
    for (int k = 0; k < 200; ++k) parts.push_back(torch::rand({5}, alone));
    EXPECT_TRUE(torch::equal(drawn[static_cast<size_t>(i)], torch::cat(parts))) << "thread " << i;
  }
}

TEST(ThreadGenerator, TheGlobalGeneratorIsUntouchedAndStaysTheDefault) {
  torch::manual_seed(7);
  const torch::Tensor expected = torch::rand({3});
  torch::manual_seed(7);
  permutation_on_thread(1);
  EXPECT_TRUE(torch::equal(torch::rand({3}), expected));
  // This thread was started without a seed; CUDA tensors always use their device's generator.
  EXPECT_FALSE(thread_generator(at::kCPU).has_value());
  ScopedThreadGenerator mine(5);
  EXPECT_TRUE(thread_generator(at::kCPU).has_value());
  EXPECT_FALSE(thread_generator(c10::Device(c10::DeviceType::CUDA, 0)).has_value());
}

TEST(ThreadGenerator, AScopeRestoresTheGeneratorBeforeIt) {
  {
    ScopedThreadGenerator outer(1);
    const auto first = thread_generator(at::kCPU);
    {
      ScopedThreadGenerator inner(2);
      EXPECT_NE(thread_generator(at::kCPU)->current_seed(), first->current_seed());
    }
    EXPECT_EQ(thread_generator(at::kCPU)->current_seed(), first->current_seed());
  }
  EXPECT_FALSE(thread_generator(at::kCPU).has_value());
}

// A denormal times one through LibTorch: zero where denormals are flushed, itself where not.
float denormal_times_one() {
  const float denormal = std::numeric_limits<float>::denorm_min() * 8;
  return (at::full({4}, denormal) * 1.0f)[0].item<float>();
}

TEST(FlushDenormals, HoldsOnTheCallingThreadAndOnThreadsStartedAfter) {
  const float denormal = std::numeric_limits<float>::denorm_min() * 8;
  set_flush_denormals(true);
  EXPECT_EQ(denormal_times_one(), 0.0f);
  float on_thread = -1.0f;
  torch_thread([&] { on_thread = denormal_times_one(); }).join();
  EXPECT_EQ(on_thread, 0.0f);

  set_flush_denormals(false);
  EXPECT_EQ(denormal_times_one(), denormal);
  torch_thread(uint64_t{1}, [&] { on_thread = denormal_times_one(); }).join();
  EXPECT_EQ(on_thread, denormal);
}

}  // namespace
}  // namespace concord::core
