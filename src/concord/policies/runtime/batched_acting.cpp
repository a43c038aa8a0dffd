#include "concord/policies/runtime/batched_acting.h"

#include <algorithm>
#include <string>
#include <utility>

#include <c10/core/InferenceMode.h>
#include <torch/torch.h>

namespace concord::policies::runtime {

BatchedActing::BatchedActing(Workers& workers, std::vector<std::unique_ptr<algos::ActorReplica>>& replicas,
                             ParameterVersions<at::Tensor>& parameters, int clients, int64_t rows_per_request,
                             int max_rows, int queue_capacity)
    : replicas_(replicas),
      versions_(replicas.size(), -1),
      parameters_(parameters),
      // Requests are batched whole: as many clients as fit in max_rows observations.
      max_requests_(static_cast<size_t>(std::max<int64_t>(1, max_rows / std::max<int64_t>(1, rows_per_request)))),
      requests_(workers, "prediction queue", static_cast<size_t>(queue_capacity), "an agent", "the predictors") {
  for (int c = 0; c < clients; ++c) {
    const std::string name = "agent " + std::to_string(c);
    replies_.push_back(std::make_unique<Channel<torch::Tensor>>(workers, name + " reply", 1, "the predictors", name));
    clients_.push_back(std::unique_ptr<Client>(new Client(*this, c)));
  }
}

algos::ActorOutput BatchedActing::Client::act(const algos::ActorInput& input, const algos::ActingContext& context) {
  service_.requests_.push(Request{index_, input.observations, context});
  algos::ActorOutput out;
  if (!service_.replies_[static_cast<size_t>(index_)]->pop(out.actions)) throw Stopped{};
  return out;
}

bool BatchedActing::serve_batch(int predictor) {
  std::vector<Request> requests;
  const Popped popped = requests_.try_pop_batch(requests, max_requests_);
  if (popped == Popped::kClosed) return false;
  if (popped == Popped::kIdle) return true;
  algos::ActorReplica& replica = *replicas_[static_cast<size_t>(predictor)];
  int64_t& version = versions_[static_cast<size_t>(predictor)];
  if (parameters_.latest() != version) {
    version = parameters_.read_newest([&](at::Tensor& published) { replica.assign(published); });
  }
  std::vector<torch::Tensor> rows;
  rows.reserve(requests.size());
  for (const Request& request : requests) rows.push_back(request.observations);
  torch::Tensor actions;
  {
    c10::InferenceMode inference;
    actions = replica.act(rows.size() == 1 ? rows.front() : torch::cat(rows), requests.front().context).actions;
  }
  // Each client has one request in flight, so its reply slot is free.
  int64_t offset = 0;
  for (const Request& request : requests) {
    const int64_t count = request.observations.size(0);
    replies_[static_cast<size_t>(request.client)]->push(actions.narrow(0, offset, count));
    offset += count;
  }
  return true;
}

}  // namespace concord::policies::runtime
