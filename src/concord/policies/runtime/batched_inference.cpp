#include "concord/policies/runtime/batched_inference.h"

#include <algorithm>
#include <map>
#include <stdexcept>
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
algos::TensorMap joined_state(const std::vector<const InferenceRequest*>& requests, nn::ActorCritic& model,
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

torch::Tensor joined_starts(const std::vector<const InferenceRequest*>& requests, torch::Device device) {
  std::vector<torch::Tensor> parts;
  for (const auto* request : requests) {
    parts.push_back(request->starts.defined()
                        ? request->starts.to(device, torch::kFloat32)
                        : torch::zeros({request->observations.size(0)}, torch::TensorOptions().device(device)));
  }
  return torch::cat(parts);
}

// Every predictor reads the one ActorCopy, under its shared lock: one forward pass for the requests
// that need actions, one for those that need values; actions drawn with each client's generator.
class ActorCriticNetwork final : public PredictorNetwork {
 public:
  ActorCriticNetwork(ActorCopy& parameters, torch::Device device) : parameters_(parameters), device_(device) {}

  void answer(int /*predictor*/, const Batch& batch, std::vector<Reply>& replies) override {
    std::vector<torch::Tensor> act_rows, value_rows;
    std::vector<const InferenceRequest*> act_requests, value_requests;
    for (const auto& asked : batch) {
      const InferenceRequest& request = asked.request;
      (request.values_only ? value_rows : act_rows).push_back(request.observations);
      (request.values_only ? value_requests : act_requests).push_back(&request);
    }
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
        values =
            (memory ? model->value(torch::cat(value_rows).to(device_), joined_state(value_requests, model, device_),
                                   joined_starts(value_requests, device_))
                    : model->value(torch::cat(value_rows).to(device_)))
                .to(torch::kCPU);
      }
      for (size_t i = 0; i < batch.size(); ++i) {
        const InferenceRequest& request = batch[i].request;
        const int64_t count = request.observations.size(0);
        if (request.values_only) {
          replies[i] = Reply{{}, {}, values.narrow(0, value_offset, count), version, {}};
          value_offset += count;
          continue;
        }
        const nn::PolicyOutput rows = rows_of(acted, act_offset, count);
        act_offset += count;
        const core::ScopedThreadGenerator client_generator(*request.generator);
        const nn::ActionDistribution distribution = model->distribution(rows);
        const torch::Tensor actions = distribution.sample();
        replies[i] = Reply{actions.to(torch::kCPU),
                           distribution.log_prob(actions).to(torch::kCPU),
                           rows.value.to(torch::kCPU),
                           version,
                           {}};
        for (const auto& [name, state] : next_state) {
          replies[i].state[name] = state.narrow(0, act_offset - count, count).to(torch::kCPU);
        }
      }
    });
  }

 private:
  ActorCopy& parameters_;
  torch::Device device_;
};

// Predictor p acts with replicas[p], which first picks up the newest published parameters if they
// changed: one act() per batch, under the context of its oldest request.
class ReplicaNetwork final : public PredictorNetwork {
 public:
  ReplicaNetwork(std::vector<std::unique_ptr<algos::ActorReplica>>& replicas, ParameterVersions<at::Tensor>& parameters)
      : replicas_(replicas), versions_(replicas.size(), -1), parameters_(parameters) {}

  void answer(int predictor, const Batch& batch, std::vector<Reply>& replies) override {
    algos::ActorReplica& replica = *replicas_[static_cast<size_t>(predictor)];
    int64_t& version = versions_[static_cast<size_t>(predictor)];
    if (parameters_.latest() != version) {
      version = parameters_.read_newest([&](at::Tensor& published) { replica.assign(published); });
    }
    std::vector<torch::Tensor> rows;
    rows.reserve(batch.size());
    for (const auto& asked : batch) {
      if (asked.request.values_only) {
        throw std::logic_error("batched inference: an off-policy actor has no critic to bootstrap from");
      }
      rows.push_back(asked.request.observations);
    }
    torch::Tensor actions;
    {
      c10::InferenceMode inference;
      actions = replica.act(rows.size() == 1 ? rows.front() : torch::cat(rows), batch.front().request.context).actions;
    }
    int64_t offset = 0;
    for (size_t i = 0; i < batch.size(); ++i) {
      const int64_t count = batch[i].request.observations.size(0);
      replies[i] = Reply{actions.narrow(0, offset, count), {}, {}, version, {}};
      offset += count;
    }
  }

 private:
  std::vector<std::unique_ptr<algos::ActorReplica>>& replicas_;
  std::vector<int64_t> versions_;  // the parameters' version each predictor holds (-1: none)
  ParameterVersions<at::Tensor>& parameters_;
};

}  // namespace

std::unique_ptr<PredictorNetwork> actor_critic_network(ActorCopy& parameters, torch::Device device) {
  return std::make_unique<ActorCriticNetwork>(parameters, device);
}

std::unique_ptr<PredictorNetwork> replica_network(std::vector<std::unique_ptr<algos::ActorReplica>>& replicas,
                                                  ParameterVersions<at::Tensor>& parameters) {
  return std::make_unique<ReplicaNetwork>(replicas, parameters);
}

BatchedInference::BatchedInference(Workers& workers, std::unique_ptr<PredictorNetwork> network, int predictors,
                                   int clients, int64_t rows_per_request, int max_rows, int queue_capacity)
    : network_(std::move(network)),
      service_(workers, clients, rows_per_request, max_rows, queue_capacity),
      scratch_(static_cast<size_t>(predictors)) {
  for (int c = 0; c < clients; ++c) clients_.push_back(std::unique_ptr<Client>(new Client(*this, c)));
}

Reply BatchedInference::Client::ask(const algos::ActorInput& input, const algos::ActingContext& context,
                                    bool values_only) {
  if (!generator_.defined()) generator_ = *core::thread_generator(torch::kCPU);
  Reply reply = service_.service_.ask(index_, InferenceRequest{input.observations, input.state, input.episode_starts,
                                                               context, &generator_, values_only});
  if (first_version_ < 0) first_version_ = reply.version;
  return reply;
}

algos::ActorOutput BatchedInference::Client::act(const algos::ActorInput& input, const algos::ActingContext& context) {
  Reply reply = ask(input, context, /*values_only=*/false);
  algos::ActorOutput out{std::move(reply.actions), {}, std::move(reply.state)};
  if (reply.log_probs.defined()) {
    out.extras.emplace("log_probs", std::move(reply.log_probs));
    out.extras.emplace("values", std::move(reply.values));
  }
  return out;
}

torch::Tensor BatchedInference::Client::bootstrap_value(const algos::ActorInput& input) {
  return ask(input, algos::ActingContext{}, /*values_only=*/true).values;
}

int64_t BatchedInference::Client::take_first_version() { return std::exchange(first_version_, -1); }

bool BatchedInference::serve_batch(int predictor) {
  Scratch& scratch = scratch_[static_cast<size_t>(predictor)];
  PredictorNetwork::Batch& batch = scratch.batch;
  batch.clear();
  const Popped popped = service_.take(batch);
  if (popped == Popped::kClosed) return false;
  if (popped == Popped::kIdle) return true;
  scratch.replies.resize(batch.size());
  network_->answer(predictor, batch, scratch.replies);
  int64_t rows = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    rows += batch[i].request.observations.size(0);
    service_.answer(batch[i].client, std::move(scratch.replies[i]));
  }
  batch.clear();  // the clients' tensors are theirs again
  predicted_rows_ += rows;
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
