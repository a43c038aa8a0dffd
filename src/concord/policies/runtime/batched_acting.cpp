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
      service_(workers, clients, rows_per_request, max_rows, queue_capacity) {
  for (int c = 0; c < clients; ++c) clients_.push_back(std::unique_ptr<Client>(new Client(*this, c)));
}

algos::ActorOutput BatchedActing::Client::act(const algos::ActorInput& input, const algos::ActingContext& context) {
  algos::ActorOutput out;
  out.actions = service_.service_.ask(index_, Request{input.observations, context});
  return out;
}

bool BatchedActing::serve_batch(int predictor) {
  std::vector<RequestService<Request, torch::Tensor>::Asked> batch;
  const Popped popped = service_.take(batch);
  if (popped == Popped::kClosed) return false;
  if (popped == Popped::kIdle) return true;
  algos::ActorReplica& replica = *replicas_[static_cast<size_t>(predictor)];
  int64_t& version = versions_[static_cast<size_t>(predictor)];
  if (parameters_.latest() != version) {
    version = parameters_.read_newest([&](at::Tensor& published) { replica.assign(published); });
  }
  std::vector<torch::Tensor> rows;
  rows.reserve(batch.size());
  for (const auto& asked : batch) rows.push_back(asked.request.observations);
  torch::Tensor actions;
  {
    c10::InferenceMode inference;
    actions = replica.act(rows.size() == 1 ? rows.front() : torch::cat(rows), batch.front().request.context).actions;
  }
  int64_t offset = 0;
  for (const auto& asked : batch) {
    const int64_t count = asked.request.observations.size(0);
    service_.answer(asked.client, actions.narrow(0, offset, count));
    offset += count;
  }
  return true;
}

}  // namespace concord::policies::runtime
