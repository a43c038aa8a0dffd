#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <torch/types.h>

#include "concord/comm/communicator.h"

namespace concord::comm::test {

// A communicator of `world_size` ranks, named `backend`, that fails any operation: for code that
// must decide (or refuse) before it communicates.
class UnusedCommunicator final : public Communicator {
 public:
  explicit UnusedCommunicator(int world_size = 2, std::string backend = "unused")
      : world_size_(world_size), backend_(std::move(backend)) {}

  int rank() const override { return 0; }
  int world_size() const override { return world_size_; }
  std::string backend() const override { return backend_; }
  std::chrono::milliseconds timeout() const override { return std::chrono::milliseconds(1); }
  std::unique_ptr<Request> allreduce_async(const torch::Tensor&, ReduceOp) override { fail(); }
  std::unique_ptr<Request> broadcast_async(const torch::Tensor&, int) override { fail(); }
  std::unique_ptr<Request> send_async(const torch::Tensor&, int, int) override { fail(); }
  std::unique_ptr<Request> recv_async(const torch::Tensor&, int, int) override { fail(); }
  std::vector<torch::Tensor> allgather(const torch::Tensor&) override { fail(); }
  void reduce_scatter(const torch::Tensor&, const std::vector<torch::Tensor>&, ReduceOp) override { fail(); }
  void barrier() override { fail(); }

 private:
  [[noreturn]] static void fail() { throw CommError("unexpected communication"); }

  int world_size_;
  std::string backend_;
};

}  // namespace concord::comm::test
