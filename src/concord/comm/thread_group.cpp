#include "concord/comm/thread_group.h"

#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include <torch/torch.h>

#include "concord/core/blas.h"

namespace concord::comm {

// One collective in progress: the ranks' inputs, then the result every rank copies out.
struct CollectiveSlot {
  std::string operation;
  std::vector<torch::Tensor> inputs;  // per rank
  std::vector<torch::Tensor> result;  // per rank (the same tensor for allreduce/broadcast)
  int arrived = 0;
  int departed = 0;
  bool done = false;
};

struct ThreadGroupState {
  ThreadGroupState(int size, std::chrono::milliseconds wait_timeout)
      : world_size(size),
        timeout(wait_timeout),
        created(static_cast<size_t>(size), false),
        left(static_cast<size_t>(size), false) {}

  const int world_size;
  const std::chrono::milliseconds timeout;
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<bool> created;
  std::vector<bool> left;                                                     // ranks whose communicator is gone
  std::map<int64_t, CollectiveSlot> collectives;                              // by sequence number
  std::map<std::tuple<int, int, int>, std::vector<torch::Tensor>> mailboxes;  // (source, destination, tag)

  std::string absent_ranks(const CollectiveSlot& slot) const {
    std::string ranks;
    for (int rank = 0; rank < world_size; ++rank) {
      if (!slot.inputs[static_cast<size_t>(rank)].defined())
        ranks += (ranks.empty() ? "" : ", ") + std::to_string(rank);
    }
    return ranks;
  }
};

namespace {

class DoneRequest : public Request {
 public:
  void wait() override {}
  void abort() override {}
};

torch::Tensor reduce(const std::vector<torch::Tensor>& tensors, ReduceOp op) {
  torch::Tensor result = tensors.front().clone();
  for (size_t i = 1; i < tensors.size(); ++i) {
    switch (op) {
      case ReduceOp::kSum:
        result.add_(tensors[i]);
        break;
      case ReduceOp::kMax:
        result = torch::maximum(result, tensors[i]);
        break;
      case ReduceOp::kMin:
        result = torch::minimum(result, tensors[i]);
        break;
    }
  }
  return result;
}

class ThreadCommunicator : public Communicator {
 public:
  ThreadCommunicator(std::shared_ptr<ThreadGroupState> state, int rank) : state_(std::move(state)), rank_(rank) {}

  ~ThreadCommunicator() override {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->left[static_cast<size_t>(rank_)] = true;
    state_->changed.notify_all();
  }

  int rank() const override { return rank_; }
  int world_size() const override { return state_->world_size; }
  std::string backend() const override { return "threads"; }
  std::chrono::milliseconds timeout() const override { return state_->timeout; }

  std::unique_ptr<Request> allreduce_async(const torch::Tensor& tensor, ReduceOp op) override {
    count_bytes(tensor);
    std::vector<torch::Tensor> result =
        collective("allreduce", tensor, [op](const std::vector<torch::Tensor>& inputs, int world_size) {
          return std::vector<torch::Tensor>(static_cast<size_t>(world_size), reduce(inputs, op));
        });
    tensor.copy_(result[static_cast<size_t>(rank_)]);
    return std::make_unique<DoneRequest>();
  }

  std::unique_ptr<Request> broadcast_async(const torch::Tensor& tensor, int root) override {
    check_rank(root, "broadcast root");
    count_bytes(tensor);
    std::vector<torch::Tensor> result = collective(
        "broadcast from " + std::to_string(root), tensor,
        [root](const std::vector<torch::Tensor>& inputs, int world_size) {
          return std::vector<torch::Tensor>(static_cast<size_t>(world_size), inputs[static_cast<size_t>(root)].clone());
        });
    if (rank_ != root) tensor.copy_(result[static_cast<size_t>(rank_)]);
    return std::make_unique<DoneRequest>();
  }

  std::vector<torch::Tensor> allgather(const torch::Tensor& tensor) override {
    count_bytes(tensor);
    const std::vector<torch::Tensor> result =
        collective("allgather", tensor, [](const std::vector<torch::Tensor>& inputs, int world_size) {
          return std::vector<torch::Tensor>(static_cast<size_t>(world_size), torch::stack(inputs));
        });
    const torch::Tensor& stacked = result[static_cast<size_t>(rank_)];
    std::vector<torch::Tensor> parts;
    for (int rank = 0; rank < world_size(); ++rank) parts.push_back(stacked[rank].clone());
    return parts;
  }

  void reduce_scatter(const torch::Tensor& output, const std::vector<torch::Tensor>& inputs, ReduceOp op) override {
    if (static_cast<int>(inputs.size()) != world_size()) {
      throw std::invalid_argument("reduce_scatter needs world_size() = " + std::to_string(world_size()) +
                                  " inputs, got " + std::to_string(inputs.size()));
    }
    const torch::Tensor stacked = torch::stack(inputs);
    count_bytes(stacked);
    std::vector<torch::Tensor> result =
        collective("reduce_scatter", stacked, [op](const std::vector<torch::Tensor>& all, int world_size) {
          const torch::Tensor reduced = reduce(all, op);
          std::vector<torch::Tensor> parts;
          for (int rank = 0; rank < world_size; ++rank) parts.push_back(reduced[rank]);
          return parts;
        });
    output.copy_(result[static_cast<size_t>(rank_)]);
  }

  void barrier() override {
    collective("barrier", torch::zeros({1}), [](const std::vector<torch::Tensor>& inputs, int world_size) {
      return std::vector<torch::Tensor>(static_cast<size_t>(world_size), inputs.front());
    });
  }

  std::unique_ptr<Request> send_async(const torch::Tensor& tensor, int destination, int tag) override {
    check_rank(destination, "send destination");
    count_bytes(tensor);
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->mailboxes[{rank_, destination, tag}].push_back(tensor.clone());
    state_->changed.notify_all();
    return std::make_unique<DoneRequest>();
  }

  std::unique_ptr<Request> recv_async(const torch::Tensor& tensor, int source, int tag) override;

 private:
  friend class ThreadRecvRequest;

  void check_rank(int rank, const char* what) const {
    if (rank < 0 || rank >= world_size()) {
      throw std::invalid_argument(std::string(what) + " " + std::to_string(rank) + " is not a rank of a group of " +
                                  std::to_string(world_size()));
    }
  }

  // Deposits `input` in this rank's next collective, waits for every rank, and returns the
  // result computed once by the last rank to arrive.
  template <typename Combine>
  std::vector<torch::Tensor> collective(const std::string& operation, const torch::Tensor& input, Combine combine) {
    const int64_t sequence = next_sequence_++;
    std::unique_lock<std::mutex> lock(state_->mutex);
    CollectiveSlot& slot = state_->collectives[sequence];
    if (slot.inputs.empty()) {
      slot.operation = operation;
      slot.inputs.resize(static_cast<size_t>(world_size()));
    } else if (slot.operation != operation) {
      throw CommError("collective #" + std::to_string(sequence) + ": rank " + std::to_string(rank_) + " called " +
                      operation + " while another rank called " + slot.operation);
    }
    slot.inputs[static_cast<size_t>(rank_)] = input;
    if (++slot.arrived == world_size()) {
      slot.result = combine(slot.inputs, world_size());
      slot.done = true;
      state_->changed.notify_all();
    }
    const auto deadline = std::chrono::steady_clock::now() + state_->timeout;
    while (!slot.done) {
      for (int rank = 0; rank < world_size(); ++rank) {
        if (state_->left[static_cast<size_t>(rank)] && !slot.inputs[static_cast<size_t>(rank)].defined()) {
          throw CommError(operation + " (collective #" + std::to_string(sequence) + "): rank " + std::to_string(rank) +
                          " left the thread group without taking part");
        }
      }
      if (state_->changed.wait_until(lock, deadline) == std::cv_status::timeout && !slot.done) {
        throw CommTimeout(operation + " (collective #" + std::to_string(sequence) + "): rank(s) " +
                          state_->absent_ranks(slot) + " did not take part within " +
                          std::to_string(state_->timeout.count()) + " ms");
      }
    }
    std::vector<torch::Tensor> result = slot.result;
    if (++slot.departed == world_size()) state_->collectives.erase(sequence);
    return result;
  }

  std::shared_ptr<ThreadGroupState> state_;
  int rank_;
  int64_t next_sequence_ = 0;
};

class ThreadRecvRequest : public Request {
 public:
  ThreadRecvRequest(std::shared_ptr<ThreadGroupState> state, torch::Tensor tensor, int source, int destination, int tag)
      : state_(std::move(state)), tensor_(std::move(tensor)), source_(source), destination_(destination), tag_(tag) {}

  void wait() override {
    if (done_) return;
    std::unique_lock<std::mutex> lock(state_->mutex);
    const auto key = std::make_tuple(source_, destination_, tag_);
    const auto deadline = std::chrono::steady_clock::now() + state_->timeout;
    const std::string what = "recv from rank " + std::to_string(source_) + " (tag " + std::to_string(tag_) + ")";
    while (true) {
      auto mailbox = state_->mailboxes.find(key);
      if (mailbox != state_->mailboxes.end() && !mailbox->second.empty()) {
        torch::Tensor message = mailbox->second.front();
        mailbox->second.erase(mailbox->second.begin());
        if (message.sizes() != tensor_.sizes() || message.scalar_type() != tensor_.scalar_type()) {
          throw CommError(what + ": the message has shape " + c10::str(message.sizes()) + " " +
                          std::string(c10::toString(message.scalar_type())) + ", the receive buffer " +
                          c10::str(tensor_.sizes()) + " " + std::string(c10::toString(tensor_.scalar_type())));
        }
        tensor_.copy_(message);
        done_ = true;
        return;
      }
      if (state_->left[static_cast<size_t>(source_)])
        throw CommError(what + ": rank " + std::to_string(source_) + " left the thread group");
      if (aborted_) {
        done_ = true;
        throw CommAborted(what + " was abandoned (aborted before it completed)");
      }
      if (state_->changed.wait_until(lock, deadline) == std::cv_status::timeout) {
        throw CommTimeout(what + ": nothing arrived within " + std::to_string(state_->timeout.count()) + " ms");
      }
    }
  }

 private:
  void abort() override {
    std::lock_guard<std::mutex> lock(state_->mutex);
    aborted_ = true;
    state_->changed.notify_all();
  }

 private:
  std::shared_ptr<ThreadGroupState> state_;
  torch::Tensor tensor_;
  int source_;
  int destination_;
  int tag_;
  bool done_ = false;
  bool aborted_ = false;  // guarded by state_->mutex
};

std::unique_ptr<Request> ThreadCommunicator::recv_async(const torch::Tensor& tensor, int source, int tag) {
  check_rank(source, "recv source");
  return std::make_unique<ThreadRecvRequest>(state_, tensor, source, rank_, tag);
}

}  // namespace

ThreadGroup::ThreadGroup(int world_size, std::chrono::milliseconds timeout) {
  if (world_size < 1)
    throw std::invalid_argument("a thread group needs at least 1 rank, got " + std::to_string(world_size));
  if (world_size > 1) core::require_thread_safe_blas("a thread group of " + std::to_string(world_size) + " ranks");
  state_ = std::make_shared<ThreadGroupState>(world_size, timeout);
}

ThreadGroup::~ThreadGroup() = default;

int ThreadGroup::world_size() const { return state_->world_size; }

std::unique_ptr<Communicator> ThreadGroup::communicator(int rank) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  if (rank < 0 || rank >= state_->world_size) {
    throw std::invalid_argument("rank " + std::to_string(rank) + " is not in a thread group of " +
                                std::to_string(state_->world_size));
  }
  if (state_->created[static_cast<size_t>(rank)]) {
    throw std::invalid_argument("rank " + std::to_string(rank) + "'s communicator was already created");
  }
  state_->created[static_cast<size_t>(rank)] = true;
  return std::make_unique<ThreadCommunicator>(state_, rank);
}

}  // namespace concord::comm
