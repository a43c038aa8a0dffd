#include "concord/comm/process_group_communicator.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>
#include <utility>

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

// Rethrows the backend's exception as CommTimeout or CommError prefixed with `what`; a timeout's
// message ends with what `explain_timeout` adds (the ranks that never reached a collective).
[[noreturn]] void rethrow(const std::string& what, const std::exception& error,
                          const std::function<std::string()>& explain_timeout = nullptr) {
  std::string cause = error.what();
  // c10 appends a C++ stack trace to its messages: keep the first line.
  if (const size_t newline = cause.find('\n'); newline != std::string::npos) cause.resize(newline);
  if (is_timeout(cause)) throw CommTimeout(what + " timed out: " + cause + (explain_timeout ? explain_timeout() : ""));
  throw CommError(what + " failed: " + cause);
}

// Marks this rank as waiting for an operation while it lives (null: nobody asks).
class WaitingMark {
 public:
  explicit WaitingMark(std::shared_ptr<std::atomic<int>> waiting) : waiting_(std::move(waiting)) {
    if (waiting_) ++*waiting_;
  }
  ~WaitingMark() {
    if (waiting_) --*waiting_;
  }
  WaitingMark(const WaitingMark&) = delete;
  WaitingMark& operator=(const WaitingMark&) = delete;

 private:
  std::shared_ptr<std::atomic<int>> waiting_;
};

class WorkRequest : public Request {
 public:
  // `finish` runs after a completed wait: it copies a result staged on the backend's device back
  // into the caller's tensor.
  WorkRequest(c10::intrusive_ptr<c10d::Work> work, std::vector<torch::Tensor> tensors, std::string what,
              std::chrono::milliseconds timeout, std::function<void()> finish = nullptr,
              std::function<std::string()> explain_timeout = nullptr,
              std::shared_ptr<std::atomic<int>> waiting = nullptr)
      : work_(std::move(work)),
        tensors_(std::move(tensors)),
        what_(std::move(what)),
        timeout_(timeout),
        finish_(std::move(finish)),
        explain_timeout_(std::move(explain_timeout)),
        waiting_(std::move(waiting)) {}

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
      const WaitingMark mark(waiting_);
      completed = work_->wait(timeout_);
    } catch (const std::exception& error) {
      rethrow(what_, error, explain_timeout_);
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
  std::function<std::string()> explain_timeout_;
  std::shared_ptr<std::atomic<int>> waiting_;
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

// How far each rank got: the collectives this rank entered, whether it is waiting for an operation
// (a rank blocked on a stalled peer is not the one to blame) and a beat that shows it still runs,
// published for the others by a thread of its own; the others' read when a collective of this
// rank's timed out.
struct ProcessGroupCommunicator::Progress : std::enable_shared_from_this<Progress> {
  // One rank's published "<collectives entered> <waiting 0/1> <beat>".
  struct Report {
    int64_t entered = 0;
    bool waiting = false;
    int64_t beat = 0;
  };

  Progress(c10::intrusive_ptr<c10d::Store> store_, int rank_, int world_size_, std::chrono::milliseconds timeout_,
           StalledPeersReport report_)
      : store(std::move(store_)),
        rank(rank_),
        world_size(world_size_),
        period(std::clamp<std::chrono::milliseconds>(timeout_ / 10, std::chrono::milliseconds(50),
                                                     std::chrono::milliseconds(1000))),
        report(std::move(report_)) {}

  static std::string key(int rank) { return "concord/progress/" + std::to_string(rank); }

  void start() {
    publisher = std::thread([self = shared_from_this()] { self->publish_until_stopped(); });
  }

  void stop() {
    {
      const std::lock_guard<std::mutex> lock(mutex);
      stopping = true;
    }
    wake.notify_all();
    if (publisher.joinable()) publisher.join();
  }

  // Publishes this rank's report every `period` (a tenth of the timeout, within [50 ms, 1 s]): a
  // rank that stalls has published its count long before its peers time out.
  void publish_until_stopped() {
    int64_t beat = 0;
    std::unique_lock<std::mutex> lock(mutex);
    while (!stopping) {
      lock.unlock();
      try {
        const std::string text =
            std::to_string(entered.load()) + " " + (waiting->load() > 0 ? "1" : "0") + " " + std::to_string(++beat);
        store->set(key(rank), std::vector<uint8_t>(text.begin(), text.end()));
      } catch (const std::exception&) {
        // The store is gone (rank 0 ended): the run is ending; try again until it has.
      }
      lock.lock();
      wake.wait_for(lock, period, [this] { return stopping; });
    }
  }

  // The peers' reports, by rank (none for a rank that published nothing yet).
  std::map<int, Report> read_reports() const {
    std::map<int, Report> reports;
    for (int peer = 0; peer < world_size; ++peer) {
      if (peer == rank || !store->check({key(peer)})) continue;
      const std::vector<uint8_t> bytes = store->get(key(peer));
      std::istringstream text(std::string(bytes.begin(), bytes.end()));
      Report report;
      int waiting = 0;
      if (text >> report.entered >> waiting >> report.beat) {
        report.waiting = waiting != 0;
        reports[peer] = report;
      }
    }
    return reports;
  }

  // The ranks that never entered collective number `collective` and are not themselves waiting
  // for a peer (or are, but stopped beating: frozen), with their counts; nullopt when the store
  // does not answer in time (rank 0, which serves it, may be the stalled one).
  std::optional<std::vector<std::pair<int, int64_t>>> behind(int64_t collective) {
    using Behind = std::vector<std::pair<int, int64_t>>;
    auto task = std::make_shared<std::packaged_task<Behind()>>([self = shared_from_this(), collective] {
      const std::map<int, Report> first = self->read_reports();
      Behind found;
      bool ambiguous = false;
      for (const auto& [peer, report] : first) {
        if (report.entered < collective && report.waiting) ambiguous = true;
      }
      // A rank behind that says it waits is blocked on another peer, unless it no longer beats.
      const std::map<int, Report> second =
          ambiguous ? (std::this_thread::sleep_for(self->period * 3 / 2), self->read_reports()) : first;
      for (const auto& [peer, report] : first) {
        if (report.entered >= collective) continue;
        const auto later = second.find(peer);
        const bool frozen = ambiguous && later != second.end() && later->second.beat == report.beat;
        if (!report.waiting || frozen) found.emplace_back(peer, report.entered);
      }
      return found;
    });
    std::future<Behind> answer = task->get_future();
    std::thread([task] { (*task)(); }).detach();  // it may outlive the wait below, never the store
    if (answer.wait_for(std::chrono::seconds(3) + period * 2) != std::future_status::ready) return std::nullopt;
    try {
      return answer.get();
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }

  // "; rank 1 never reached this collective (...)" for collective number `collective`, or "".
  std::string explain(int64_t collective) {
    const auto found = behind(collective);
    if (!found || found->empty()) return "";
    std::string ranks, counts;
    std::vector<int> stalled;
    for (const auto& [peer, count] : *found) {
      ranks += (ranks.empty() ? "" : ", ") + std::to_string(peer);
      counts += (counts.empty() ? "" : ", ") + std::to_string(count);
      stalled.push_back(peer);
    }
    if (report) {
      try {
        report(stalled, collective);
      } catch (const std::exception&) {
        // The report is a courtesy to the launcher; the error below says it all.
      }
    }
    const bool one = found->size() == 1;
    return std::string("; ") + (one ? "rank " : "ranks ") + ranks + " never reached this collective (" +
           (one ? "its count of collectives entered: " : "their counts of collectives entered: ") + counts +
           "; this rank's: " + std::to_string(collective) + "): " + (one ? "it" : "they") +
           " stalled (busy or blocked outside the collectives, or stopped), the likelier cause";
  }

  // A collective's number and its explanation, for a timeout of it.
  std::function<std::string()> enter() {
    const int64_t collective = ++entered;
    return [self = shared_from_this(), collective] { return self->explain(collective); };
  }

  c10::intrusive_ptr<c10d::Store> store;
  int rank;
  int world_size;
  std::chrono::milliseconds period;
  StalledPeersReport report;
  std::atomic<int64_t> entered{0};
  // Waits in progress on this rank; shared with its requests, which may outlive the communicator.
  std::shared_ptr<std::atomic<int>> waiting = std::make_shared<std::atomic<int>>(0);
  std::mutex mutex;
  std::condition_variable wake;
  bool stopping = false;
  std::thread publisher;
};

ProcessGroupCommunicator::ProcessGroupCommunicator(c10::intrusive_ptr<ProcessGroupBackend> group,
                                                   c10::intrusive_ptr<c10d::Store> store,
                                                   std::chrono::milliseconds timeout, c10::Device device,
                                                   StalledPeersReport on_stalled_peers)
    : group_(std::move(group)), store_(std::move(store)), timeout_(timeout), device_(device) {
  if (store_ && group_->getSize() > 1) {
    progress_ =
        std::make_shared<Progress>(store_, group_->getRank(), group_->getSize(), timeout_, std::move(on_stalled_peers));
    progress_->start();
  }
}

// A collective's explanation of its timeout, or none where progress is not tracked.
std::function<std::string()> ProcessGroupCommunicator::enter_collective() {
  return progress_ ? progress_->enter() : nullptr;
}

std::shared_ptr<std::atomic<int>> ProcessGroupCommunicator::waiting() const {
  return progress_ ? progress_->waiting : nullptr;
}

torch::Tensor ProcessGroupCommunicator::on_device(const torch::Tensor& tensor) const {
  return tensor.device() == device_ ? tensor : tensor.to(device_);
}

ProcessGroupCommunicator::~ProcessGroupCommunicator() {
  if (progress_) progress_->stop();
}

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
  std::function<std::string()> explain = enter_collective();
  try {
    auto work = group_->allreduce(tensors, options);
    return std::make_unique<WorkRequest>(std::move(work), std::move(tensors), what, timeout_, copy_back(tensor, staged),
                                         std::move(explain), waiting());
  } catch (const std::exception& error) {
    rethrow(what, error, explain);
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
  std::function<std::string()> explain = enter_collective();
  try {
    auto work = group_->broadcast(tensors, options);
    return std::make_unique<WorkRequest>(std::move(work), std::move(tensors), what, timeout_, copy_back(tensor, staged),
                                         std::move(explain), waiting());
  } catch (const std::exception& error) {
    rethrow(what, error, explain);
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
    return std::make_unique<WorkRequest>(std::move(work), std::move(tensors), what, timeout_, nullptr, nullptr,
                                         waiting());
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
    return std::make_unique<WorkRequest>(std::move(work), std::move(tensors), what, timeout_, copy_back(tensor, staged),
                                         nullptr, waiting());
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
  const std::function<std::string()> explain = enter_collective();
  try {
    const WaitingMark mark(waiting());
    group_->allgather(outputs, inputs, options)->wait(timeout_);
  } catch (const std::exception& error) {
    rethrow(what, error, explain);
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
  const std::function<std::string()> explain = enter_collective();
  try {
    const WaitingMark mark(waiting());
    group_->barrier(options)->wait(timeout_);
  } catch (const std::exception& error) {
    rethrow("barrier on rank " + std::to_string(rank()) + " of " + std::to_string(world_size()), error, explain);
  }
}

}  // namespace concord::comm
