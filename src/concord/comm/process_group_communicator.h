#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <c10/core/Device.h>
#include <c10/util/intrusive_ptr.h>
#include <torch/version.h>

#include "concord/comm/communicator.h"

namespace c10d {
class Backend;
class ProcessGroup;
class Store;
}  // namespace c10d

namespace concord::comm {

// LibTorch 2 split the backends (Gloo, NCCL) out of c10d::ProcessGroup into c10d::Backend, with
// the same operations; LibTorch 1.13's backends are ProcessGroups.
#if TORCH_VERSION_MAJOR >= 2
using ProcessGroupBackend = c10d::Backend;
#else
using ProcessGroupBackend = c10d::ProcessGroup;
#endif

// A Communicator over a torch c10d backend (Gloo; NCCL or MPI where LibTorch has them): every
// operation is the backend's, waited on with `timeout`, and its failures (a timeout, a peer's
// closed connection) become CommTimeout / CommError naming the operation. A tensor that is not
// on the backend's `device` (NCCL works on CUDA tensors only) goes through a copy there, so
// callers hand in CPU tensors under every backend. Gloo has no reduce-scatter; it is emulated by
// an allreduce of the stacked inputs.
//
// A stalled peer is named: every rank publishes in the store (key concord/progress/<rank>), from
// a thread of its own ten times per timeout, how many collectives it has entered, whether it is
// waiting for an operation, and a beat. A collective that times out then reads the others'
// reports (a bounded wait) and names the ranks that never reached it and are not themselves
// waiting for a peer (or have stopped beating): busy or blocked outside the collectives, or
// stopped. They are named in its CommTimeout's message ("...; rank 1 never reached this
// collective (its count of collectives entered: 41; this rank's: 42): it stalled ...") and handed
// to `on_stalled_peers` (`concord launch` names them in its line).
class ProcessGroupCommunicator : public Communicator {
 public:
  // The ranks a timed-out collective found behind it, and that collective's number on this rank.
  using StalledPeersReport = std::function<void(const std::vector<int>& stalled, int64_t collective)>;

  // `store` is kept alive for the group's lifetime (rank 0 serves it to the others); null: no
  // progress is published or read.
  ProcessGroupCommunicator(c10::intrusive_ptr<ProcessGroupBackend> group, c10::intrusive_ptr<c10d::Store> store,
                           std::chrono::milliseconds timeout, c10::Device device = c10::Device(c10::kCPU),
                           StalledPeersReport on_stalled_peers = nullptr);
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
  // Counts a collective this rank enters; returns what a timeout of it adds to its message.
  std::function<std::string()> enter_collective();
  // The count of waits in progress that the requests keep up to date, or null.
  std::shared_ptr<std::atomic<int>> waiting() const;
  // `tensor` itself where it is on device_, else a copy of it there.
  torch::Tensor on_device(const torch::Tensor& tensor) const;

  c10::intrusive_ptr<ProcessGroupBackend> group_;
  c10::intrusive_ptr<c10d::Store> store_;
  std::chrono::milliseconds timeout_;
  c10::Device device_;
  // The collectives entered, their publication and the reading of the peers' (in the .cpp).
  struct Progress;
  std::shared_ptr<Progress> progress_;
};

}  // namespace concord::comm
