#include "concord/policies/runtime/batched_inference.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include <c10/core/InferenceMode.h>
#include <torch/torch.h>

#include "concord/core/torch_thread.h"
#include "concord/policies/runtime/metric_names.h"

namespace concord::policies::runtime {
namespace {

// Rows [offset, offset + count) of a batched forward pass.
nn::PolicyOutput rows_of(const nn::PolicyOutput& out, int64_t offset, int64_t count) {
  nn::PolicyOutput rows;
  if (out.logits.defined()) rows.logits = out.logits.narrow(0, offset, count);
  if (out.mean.defined()) rows.mean = out.mean.narrow(0, offset, count);
  rows.log_std = out.log_std;
  rows.value = out.value.narrow(0, offset, count);
  return rows;
}

// For a network with memory: the states of `requests` joined row-wise on `device` (a request that
// sends none starts from the initial state), and their episode starts.
algos::TensorMap joined_state(const std::vector<const BatchedInference::Request*>& requests, nn::ActorCritic& model,
                              torch::Device device) {
  std::map<std::string, std::vector<torch::Tensor>> parts;
  for (const auto* request : requests) {
    const algos::TensorMap state =
        request->state.empty() ? model->initial_state(request->observations.size(0)) : request->state;
    for (const auto& [name, rows] : state) parts[name].push_back(rows.to(device));
  }
  algos::TensorMap joined;
  for (auto& [name, rows] : parts) joined[name] = torch::cat(rows);
  return joined;
}

torch::Tensor joined_starts(const std::vector<const BatchedInference::Request*>& requests, torch::Device device) {
  std::vector<torch::Tensor> parts;
  for (const auto* request : requests) {
    parts.push_back(request->starts.defined()
                        ? request->starts.to(device, torch::kFloat32)
                        : torch::zeros({request->observations.size(0)}, torch::TensorOptions().device(device)));
  }
  return torch::cat(parts);
}

}  // namespace

BatchedInference::BatchedInference(Workers& workers, ActorCopy& parameters, int clients, int64_t rows_per_request,
                                   int max_rows, int queue_capacity, torch::Device device)
    : parameters_(parameters), device_(device), service_(workers, clients, rows_per_request, max_rows, queue_capacity) {
  for (int c = 0; c < clients; ++c) clients_.push_back(std::unique_ptr<Client>(new Client(*this, c)));
}

BatchedInference::Client::Client(BatchedInference& service, int index) : service_(service), index_(index) {}

Reply BatchedInference::Client::ask(const algos::ActorInput& input, bool values_only) {
  Reply reply = service_.service_.ask(index_, Request{input.observations, input.state, input.episode_starts,
                                                      values_only, *core::thread_generator(torch::kCPU)});
  if (first_version_ < 0) first_version_ = reply.version;
  return reply;
}

algos::ActorOutput BatchedInference::Client::act(const algos::ActorInput& input,
                                                 const algos::ActingContext& /*context*/) {
  Reply reply = ask(input, /*values_only=*/false);
  return {std::move(reply.actions),
          {{"log_probs", std::move(reply.log_probs)}, {"values", std::move(reply.values)}},
          std::move(reply.state)};
}

torch::Tensor BatchedInference::Client::bootstrap_value(const algos::ActorInput& input) {
  return ask(input, /*values_only=*/true).values;
}

int64_t BatchedInference::Client::take_first_version() { return std::exchange(first_version_, -1); }

bool BatchedInference::serve_batch() {
  std::vector<RequestService<Request, Reply>::Asked> batch;
  const Popped popped = service_.take(batch);
  if (popped == Popped::kClosed) return false;
  if (popped == Popped::kIdle) return true;
  std::vector<Request> requests;
  requests.reserve(batch.size());
  for (auto& asked : batch) requests.push_back(std::move(asked.request));
  // One forward pass for the requests that need actions, one for those that need values.
  std::vector<torch::Tensor> act_rows, value_rows;
  std::vector<const Request*> act_requests, value_requests;
  for (const Request& request : requests) {
    (request.values_only ? value_rows : act_rows).push_back(request.observations);
    (request.values_only ? value_requests : act_requests).push_back(&request);
  }
  std::vector<Reply> answers(requests.size());
  int64_t act_offset = 0, value_offset = 0;
  parameters_.read([&](nn::ActorCritic& model, int64_t version) {
    c10::InferenceMode inference;
    const bool memory = model->recurrent();
    nn::PolicyOutput acted;
    algos::TensorMap next_state;  // with memory: every act request's rows
    torch::Tensor values;
    if (!act_rows.empty() && memory) {
      nn::RecurrentPolicyOutput forwarded =
          model->forward(torch::cat(act_rows).to(device_), joined_state(act_requests, model, device_),
                         joined_starts(act_requests, device_));
      acted = std::move(forwarded.out);
      next_state = std::move(forwarded.state);
    } else if (!act_rows.empty()) {
      acted = model->forward(torch::cat(act_rows).to(device_));
    }
    if (!value_rows.empty()) {
      values = (memory ? model->value(torch::cat(value_rows).to(device_), joined_state(value_requests, model, device_),
                                      joined_starts(value_requests, device_))
                       : model->value(torch::cat(value_rows).to(device_)))
                   .to(torch::kCPU);
    }
    for (size_t i = 0; i < requests.size(); ++i) {
      const Request& request = requests[i];
      const int64_t count = request.observations.size(0);
      if (request.values_only) {
        answers[i] = Reply{{}, {}, values.narrow(0, value_offset, count), version, {}};
        value_offset += count;
        continue;
      }
      const nn::PolicyOutput rows = rows_of(acted, act_offset, count);
      act_offset += count;
      const core::ScopedThreadGenerator client_generator(request.generator);
      const nn::ActionDistribution distribution = model->distribution(rows);
      const torch::Tensor actions = distribution.sample();
      answers[i] = Reply{actions.to(torch::kCPU),
                         distribution.log_prob(actions).to(torch::kCPU),
                         rows.value.to(torch::kCPU),
                         version,
                         {}};
      for (const auto& [name, state] : next_state) {
        answers[i].state[name] = state.narrow(0, act_offset - count, count).to(torch::kCPU);
      }
    }
  });
  for (size_t i = 0; i < requests.size(); ++i) service_.answer(batch[i].client, std::move(answers[i]));
  predicted_rows_ += act_offset + value_offset;
  forward_passes_ += 1;
  return true;
}

void BatchedInference::add_metrics(algos::Metrics& metrics, double seconds) const {
  const auto rows = static_cast<double>(predicted_rows_.load());
  metrics[metric::kPredictionsPerSecond] = rows / seconds;
  metrics[metric::kPredictionBatchSize] = rows / static_cast<double>(std::max<int64_t>(1, forward_passes_.load()));
  metrics[metric::kPredictionQueueLength] = static_cast<double>(service_.queue_length());
}

}  // namespace concord::policies::runtime
