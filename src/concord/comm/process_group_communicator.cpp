#include "concord/comm/process_group_communicator.h"

#include <functional>

#include <torch/torch.h>
#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#endif
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

namespace concord::comm {
namespace {

c10d::ReduceOp to_c10d(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return c10d::ReduceOp::SUM;
    case ReduceOp::kMax:
      return c10d::ReduceOp::MAX;
    case ReduceOp::kMin:
      return c10d::ReduceOp::MIN;
  }
  return c10d::ReduceOp::SUM;
}

bool is_timeout(const std::string& message) {
  return message.find("Timed out") != std::string::npos || message.find("timed out") != std::string::npos ||
         message.find("timeout") != std::string::npos;
}

// Rethrows the backend's exception as CommTimeout or CommError prefixed with `what`.
[[noreturn]] void rethrow(const std::string& what, const std::exception& error) {
  std::string cause = error.what();
  // c10 appends a C++ stack trace to its messages: keep the first line.
  if (const size_t newline = cause.find('\n'); newline != std::string::npos) cause.resize(newline);
  if (is_timeout(cause)) throw CommTimeout(what + " timed out: " + cause);
  throw CommError(what + " failed: " + cause);
}

class WorkRequest : public Request {
 public:
  // `finish` runs after a completed wait: it copies a result staged on the backend's device back
  // into the caller's tensor.
  WorkRequest(c10::intrusive_ptr<c10d::Work> work, std::vector<torch::Tensor> tensors, std::string what,
              std::chrono::milliseconds timeout, std::function<void()> finish = nullptr)
      : work_(std::move(work)),
        tensors_(std::move(tensors)),
        what_(std::move(what)),
        timeout_(timeout),
        finish_(std::move(finish)) {}

  ~WorkRequest() override {
    // A request dropped without wait() must not outlive its work silently; waiting here keeps
    // the buffers alive until the backend is done with them.
    if (!done_) {
      try {
        work_->wait(timeout_);
      } catch (const std::exception&) {
      }
    }
  }

  void wait() override {
    if (done_) return;
    done_ = true;
    bool completed = false;
    try {
      completed = work_->wait(timeout_);
    } catch (const std::exception& error) {
      rethrow(what_, error);
    }
    // Gloo's send and receive answer an abort by returning false from wait().
    if (!completed) throw CommAborted(what_ + " was abandoned (aborted before it completed)");
    if (finish_) finish_();
  }

  void abort() override {
    // Only Gloo's point-to-point work can be aborted; c10d's base Work refuses, and a collective
    // cannot be abandoned by one rank alone, so its wait goes on to the timeout.
    try {
      work_->abort();
    } catch (const std::exception&) {
    }
  }

 private:
  c10::intrusive_ptr<c10d::Work> work_;
  std::vector<torch::Tensor> tensors_;  // kept alive while the backend uses them
  std::string what_;
  std::chrono::milliseconds timeout_;
  std::function<void()> finish_;
  bool done_ = false;
};

void check_tensor(const torch::Tensor& tensor, const char* operation) {
  if (!tensor.is_contiguous()) throw std::invalid_argument(std::string(operation) + " needs a contiguous tensor");
}

// Copies a result from `staged` back into the caller's `tensor`; nothing when they are one tensor.
std::function<void()> copy_back(const torch::Tensor& tensor, const torch::Tensor& staged) {
  if (staged.is_same(tensor)) return nullptr;
  return [tensor, staged] { tensor.copy_(staged); };
}

}  // namespace

ProcessGroupCommunicator::ProcessGroupCommunicator(c10::intrusive_ptr<ProcessGroupBackend> group,
                                                   c10::intrusive_ptr<c10d::Store> store,
                                                   std::chrono::milliseconds timeout, c10::Device device)
    : group_(std::move(group)), store_(std::move(store)), timeout_(timeout), device_(device) {}

torch::Tensor ProcessGroupCommunicator::on_device(const torch::Tensor& tensor) const {
  return tensor.device() == device_ ? tensor : tensor.to(device_);
}

ProcessGroupCommunicator::~ProcessGroupCommunicator() = default;

int ProcessGroupCommunicator::rank() const { return group_->getRank(); }
int ProcessGroupCommunicator::world_size() const { return group_->getSize(); }
std::string ProcessGroupCommunicator::backend() const { return group_->getBackendName(); }

std::string ProcessGroupCommunicator::describe(const std::string& operation, const torch::Tensor& tensor) const {
  return operation + " of " + std::to_string(tensor.numel() * tensor.element_size()) + " bytes on rank " +
         std::to_string(rank()) + " of " + std::to_string(world_size());
}

std::unique_ptr<Request> ProcessGroupCommunicator::allreduce_async(const torch::Tensor& tensor, ReduceOp op) {
  check_tensor(tensor, "allreduce");
  count_bytes(tensor);
  const torch::Tensor staged = on_device(tensor);
  std::vector<torch::Tensor> tensors{staged};
  c10d::AllreduceOptions options;
  options.reduceOp = to_c10d(op);
  options.timeout = timeout_;
  const std::string what = describe("allreduce", tensor);
  try {
    auto work = group_->allreduce(tensors, options);
    return std::make_unique<WorkRequest>(std::move(work), std::move(tensors), what, timeout_,
                                         copy_back(tensor, staged));
  } catch (const std::exception& error) {
    rethrow(what, error);
  }
}

std::unique_ptr<Request> ProcessGroupCommunicator::broadcast_async(const torch::Tensor& tensor, int root) {
  check_tensor(tensor, "broadcast");
  count_bytes(tensor);
  const torch::Tensor staged = on_device(tensor);
  std::vector<torch::Tensor> tensors{staged};
  c10d::BroadcastOptions options;
  options.rootRank = root;
  options.timeout = timeout_;
  const std::string what = describe("broadcast from rank " + std::to_string(root), tensor);
  try {
    auto work = group_->broadcast(tensors, options);
    return std::make_unique<WorkRequest>(std::move(work), std::move(tensors), what, timeout_,
                                         copy_back(tensor, staged));
  } catch (const std::exception& error) {
    rethrow(what, error);
  }
}

std::unique_ptr<Request> ProcessGroupCommunicator::send_async(const torch::Tensor& tensor, int destination, int tag) {
  check_tensor(tensor, "send");
  count_bytes(tensor);
  std::vector<torch::Tensor> tensors{on_device(tensor)};
  const std::string what =
      describe("send to rank " + std::to_string(destination) + " (tag " + std::to_string(tag) + ")", tensor);
  try {
    auto work = group_->send(tensors, destination, tag);
    return std::make_unique<WorkRequest>(std::move(work), std::move(tensors), what, timeout_);
  } catch (const std::exception& error) {
    rethrow(what, error);
  }
}

std::unique_ptr<Request> ProcessGroupCommunicator::recv_async(const torch::Tensor& tensor, int source, int tag) {
  check_tensor(tensor, "recv");
  const torch::Tensor staged = on_device(tensor);
  std::vector<torch::Tensor> tensors{staged};
  const std::string what =
      describe("recv from rank " + std::to_string(source) + " (tag " + std::to_string(tag) + ")", tensor);
  try {
    auto work = group_->recv(tensors, source, tag);
    return std::make_unique<WorkRequest>(std::move(work), std::move(tensors), what, timeout_,
                                         copy_back(tensor, staged));
  } catch (const std::exception& error) {
    rethrow(what, error);
  }
}

std::vector<torch::Tensor> ProcessGroupCommunicator::allgather(const torch::Tensor& tensor) {
  check_tensor(tensor, "allgather");
  count_bytes(tensor);
  std::vector<torch::Tensor> inputs{on_device(tensor)};
  std::vector<std::vector<torch::Tensor>> outputs(1);
  for (int rank = 0; rank < world_size(); ++rank) outputs[0].push_back(torch::empty_like(inputs[0]));
  c10d::AllgatherOptions options;
  options.timeout = timeout_;
  const std::string what = describe("allgather", tensor);
  try {
    group_->allgather(outputs, inputs, options)->wait(timeout_);
  } catch (const std::exception& error) {
    rethrow(what, error);
  }
  for (torch::Tensor& output : outputs[0]) output = output.to(tensor.device());
  return outputs[0];
}

void ProcessGroupCommunicator::reduce_scatter(const torch::Tensor& output, const std::vector<torch::Tensor>& inputs,
                                              ReduceOp op) {
  if (static_cast<int>(inputs.size()) != world_size()) {
    throw std::invalid_argument("reduce_scatter needs world_size() = " + std::to_string(world_size()) +
                                " inputs, got " + std::to_string(inputs.size()));
  }
  const torch::Tensor stacked = torch::stack(inputs);
  allreduce(stacked, op);
  output.copy_(stacked[rank()]);
}

void ProcessGroupCommunicator::barrier() {
  c10d::BarrierOptions options;
  options.timeout = timeout_;
  try {
    group_->barrier(options)->wait(timeout_);
  } catch (const std::exception& error) {
    rethrow("barrier on rank " + std::to_string(rank()) + " of " + std::to_string(world_size()), error);
  }
}

}  // namespace concord::comm
