#pragma once

#include <chrono>
#include <string>

#include <c10/util/intrusive_ptr.h>

#include "concord/comm/communicator.h"

namespace c10d {
class ProcessGroup;
class Store;
}  // namespace c10d

namespace concord::comm {

// A Communicator over a torch c10d ProcessGroup (Gloo here; NCCL or MPI where LibTorch has
// them): every operation is the process group's, waited on with `timeout`, and its failures
// (a timeout, a peer's closed connection) become CommTimeout / CommError naming the operation.
// Gloo has no reduce-scatter; it is emulated by an allreduce of the stacked inputs.
class ProcessGroupCommunicator : public Communicator {
 public:
  // `store` is kept alive for the group's lifetime (rank 0 serves it to the others).
  ProcessGroupCommunicator(c10::intrusive_ptr<c10d::ProcessGroup> group, c10::intrusive_ptr<c10d::Store> store,
                           std::chrono::milliseconds timeout);
  ~ProcessGroupCommunicator() override;

  int rank() const override;
  int world_size() const override;
  std::string backend() const override;
  std::chrono::milliseconds timeout() const override { return timeout_; }

  std::unique_ptr<Request> allreduce_async(const torch::Tensor& tensor, ReduceOp op) override;
  std::unique_ptr<Request> broadcast_async(const torch::Tensor& tensor, int root) override;
  std::unique_ptr<Request> send_async(const torch::Tensor& tensor, int destination, int tag) override;
  std::unique_ptr<Request> recv_async(const torch::Tensor& tensor, int source, int tag) override;
  std::vector<torch::Tensor> allgather(const torch::Tensor& tensor) override;
  void reduce_scatter(const torch::Tensor& output, const std::vector<torch::Tensor>& inputs, ReduceOp op) override;
  void barrier() override;

 private:
  std::string describe(const std::string& operation, const torch::Tensor& tensor) const;

  c10::intrusive_ptr<c10d::ProcessGroup> group_;
  c10::intrusive_ptr<c10d::Store> store_;
  std::chrono::milliseconds timeout_;
};

}  // namespace concord::comm
