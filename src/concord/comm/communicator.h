#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <torch/types.h>

namespace concord::comm {

// Every failure of a communication operation: a peer that died, a closed connection, a backend
// error. The message names the operation, the ranks involved and, where known, the cause.
class CommError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A peer did not take part within the communicator's timeout (it hangs, never joined, or died
// without closing its connection). A subclass of CommError, so one catch handles both.
class CommTimeout : public CommError {
 public:
  using CommError::CommError;
};

// A wait that Request::abort() ended: the peer is not known to have failed, and the connection
// stays usable. A subclass of CommError.
class CommAborted : public CommError {
 public:
  using CommError::CommError;
};

enum class ReduceOp { kSum, kMax, kMin };

// An operation in flight. wait() blocks at most the communicator's timeout; it throws
// CommTimeout or CommError naming the operation. Waiting twice is a no-op.
class Request {
 public:
  virtual ~Request() = default;
  virtual void wait() = 0;
  // Ends a wait() in progress, or the next one, at once with CommAborted, without failing the
  // connection: a backend timeout is fatal to the rank (Gloo answers one by closing every
  // connection of the process), an abort is not. Callers bound a wait by less than the timeout
  // this way (comm::Watchdog). The only member another thread may call. An aborted receive may
  // still be written by a message that arrives later, so its tensor must stay alive and unused.
  virtual void abort() = 0;
};

// The messaging layer every multi-rank component uses: collectives and tagged point-to-point
// messages of tensors between `world_size()` ranks. Implementations: ProcessGroupCommunicator
// (torch c10d: Gloo between processes and machines) and ThreadGroup's communicators (ranks are
// threads of one process, so the same code runs in tests without processes).
//
// Rules, as in MPI and c10d: every rank calls the collectives in the same order with tensors of
// the same shape and dtype; operations are in place on the caller's tensor; a tensor handed to
// an async operation must stay alive and untouched until its wait() returns. One thread at a
// time per communicator. Tensors must be contiguous; the thread backend needs them on the CPU,
// and the c10d backends copy a tensor that is not on their device there and back.
class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  // "gloo", "threads", ...: for logs and benchmark tables.
  virtual std::string backend() const = 0;
  // The bound on every blocking wait.
  virtual std::chrono::milliseconds timeout() const = 0;

  // --- Asynchronous operations: start now, wait() later ---
  // tensor <- op over ranks of tensor.
  virtual std::unique_ptr<Request> allreduce_async(const torch::Tensor& tensor, ReduceOp op) = 0;
  // tensor <- root's tensor.
  virtual std::unique_ptr<Request> broadcast_async(const torch::Tensor& tensor, int root) = 0;
  virtual std::unique_ptr<Request> send_async(const torch::Tensor& tensor, int destination, int tag) = 0;
  // tensor <- what `source` sent with `tag`; the shape and dtype must match the sender's.
  virtual std::unique_ptr<Request> recv_async(const torch::Tensor& tensor, int source, int tag) = 0;

  // --- Blocking operations ---
  void allreduce(const torch::Tensor& tensor, ReduceOp op = ReduceOp::kSum) { allreduce_async(tensor, op)->wait(); }
  // Sum over ranks divided by world_size() (floating-point tensors).
  void allreduce_mean(const torch::Tensor& tensor);
  void broadcast(const torch::Tensor& tensor, int root) { broadcast_async(tensor, root)->wait(); }
  void send(const torch::Tensor& tensor, int destination, int tag) { send_async(tensor, destination, tag)->wait(); }
  void recv(const torch::Tensor& tensor, int source, int tag) { recv_async(tensor, source, tag)->wait(); }
  // Every rank's `tensor` (same shape on all ranks), in rank order.
  virtual std::vector<torch::Tensor> allgather(const torch::Tensor& tensor) = 0;
  // output <- op over ranks of inputs[rank()] (inputs: world_size() tensors shaped like output).
  // Backends without a native reduce-scatter emulate it with an allreduce.
  virtual void reduce_scatter(const torch::Tensor& output, const std::vector<torch::Tensor>& inputs, ReduceOp op) = 0;
  virtual void barrier() = 0;

  // Payload bytes this rank handed to operations so far (a send, an allreduce or a broadcast of
  // n bytes counts n): what sync strategies report as "bytes communicated".
  int64_t bytes_communicated() const { return bytes_communicated_; }

 protected:
  void count_bytes(const torch::Tensor& tensor) { bytes_communicated_ += tensor.numel() * tensor.element_size(); }

 private:
  int64_t bytes_communicated_ = 0;
};

}  // namespace concord::comm
