#pragma once

// Runs one body per rank on threads joined by a comm::ThreadGroup, and a one-parameter module
// for update rules worked by hand. Header-only, for the sync, parallel and supervised tests.

#include <exception>
#include <functional>
#include <thread>
#include <vector>

#include <torch/torch.h>

#include "concord/comm/thread_group.h"

namespace concord::test {

// body(communicator) on `world` threads; rethrows the first exception any of them threw.
inline void run_on_ranks(int world, const std::function<void(comm::Communicator&)>& body) {
  comm::ThreadGroup group(world, std::chrono::seconds(20));
  std::vector<std::exception_ptr> errors(static_cast<size_t>(world));
  std::vector<std::thread> threads;
  for (int rank = 0; rank < world; ++rank) {
    threads.emplace_back([&, rank, communicator = group.communicator(rank)]() mutable {
      try {
        body(*communicator);
      } catch (...) {
        errors[static_cast<size_t>(rank)] = std::current_exception();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (const auto& error : errors) {
    if (error) std::rethrow_exception(error);
  }
}

// A module with `size` parameters, all `value`: the replica of the hand-worked examples.
struct VectorModule : torch::nn::Module {
  explicit VectorModule(double value, int64_t size = 1) { x = register_parameter("x", torch::full({size}, value)); }
  torch::Tensor x;
};

// Overwrites a replica's parameters (outside autograd), as if it had trained to `value`.
inline void set_values(const torch::Tensor& values, double value) {
  torch::NoGradGuard no_grad;
  values.fill_(value);
}

}  // namespace concord::test
