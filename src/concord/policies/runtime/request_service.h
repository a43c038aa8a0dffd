#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "concord/policies/runtime/channel.h"
#include "concord/policies/runtime/workers.h"

namespace concord::policies::runtime {

// The queue and reply plumbing of acting as a service (GA3C's predictors, SEED RL's central
// inference: BatchedInference). Clients each have one request in flight and wait for its reply;
// server threads take as many requests as fit in `max_rows` rows (requests are batched whole) and
// answer each one. What a request holds, and how a batch is answered, is the service's own.
//
//   client c:  ask(c, request)  -> the prediction queue -> client c's reply slot -> reply
//   server:    take(batch) ... answer(c, reply) for every request of the batch
//
// Every wait names the queue and its waiter, and times out as the run's Workers say.
template <typename Request, typename Reply>
class RequestService {
 public:
  struct Asked {
    int client = 0;
    Request request;
  };

  // `rows_per_request`: each client's number of envs.
  RequestService(Workers& workers, int clients, int64_t rows_per_request, int max_rows, int queue_capacity)
      : max_requests_(static_cast<size_t>(std::max<int64_t>(1, max_rows / std::max<int64_t>(1, rows_per_request)))),
        requests_(workers, "prediction queue", static_cast<size_t>(queue_capacity), "an agent", "the predictors") {
    for (int c = 0; c < clients; ++c) {
      const std::string name = "agent " + std::to_string(c);
      replies_.push_back(std::make_unique<Channel<Reply>>(workers, name + " reply", 1, "the predictors", name));
    }
  }

  // Client c's request, answered. Blocks; throws Stopped once the run stops.
  Reply ask(int client, Request request) {
    requests_.push(Asked{client, std::move(request)});
    Reply reply;
    if (!replies_[static_cast<size_t>(client)]->pop(reply)) throw Stopped{};
    return reply;
  }

  // A server's turn: waits for requests and takes a batch of them (kItem), or none after an idle
  // wait (kIdle: a spare server is no error), or none for good once closed and drained (kClosed).
  Popped take(std::vector<Asked>& batch) { return requests_.try_pop_batch(batch, max_requests_); }
  // The reply to client c's request. Each client has one request in flight, so its slot is free.
  void answer(int client, Reply reply) { replies_[static_cast<size_t>(client)]->push(std::move(reply)); }

  // No more requests: servers answer what is queued, then take() says kClosed.
  void close() { requests_.close(); }
  size_t queue_length() const { return requests_.size(); }

 private:
  size_t max_requests_;
  Channel<Asked> requests_;
  std::vector<std::unique_ptr<Channel<Reply>>> replies_;
};

}  // namespace concord::policies::runtime
