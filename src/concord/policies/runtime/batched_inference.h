#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>
#include <torch/types.h>

#include "concord/algos/actor.h"
#include "concord/algos/off_policy_learner.h"
#include "concord/policies/runtime/actor_copy.h"
#include "concord/policies/runtime/channel.h"
#include "concord/policies/runtime/parameter_versions.h"
#include "concord/policies/runtime/request_service.h"
#include "concord/policies/runtime/workers.h"

namespace concord::policies::runtime {

// Inference as a service (GA3C's predictors, SEED RL's central inference), for either algorithm
// family: clients send their observations, predictor threads take as many requests as fit in
// `max_rows` rows, run one forward pass of the predictors' network over them and answer each
// client.
//
//   client c:     client(c).act(observations, context) -> request queue -> client c's reply slot
//   predictor p:  while (serve_batch(p)) {}               one batched forward pass per call
//
// The network is the one part that differs between the families (PredictorNetwork):
//   an actor-critic (on-policy, actor_critic_network): every predictor reads the one ActorCopy the
//     learner publishes to; actions are drawn per request with the asking client's own generator,
//     so what a client draws never depends on which other requests shared its forward pass; with
//     memory, each request carries its envs' state and episode starts, and the reply the state
//     after the step; a bootstrap request (bootstrap_value) asks for values only;
//   an off-policy actor (replica_network): predictor p acts with a network copy of its own (an
//     ActorReplica), picking up the newest published parameters before each batch if they
//     changed; a batch acts under its oldest request's context, actions drawn from the
//     predictor's generator, so clients should all explore alike (actor 0 of 1).
// A client has one request in flight. A reply is on the CPU (an off-policy network's: where it
// acted), row for row.
struct Reply {
  torch::Tensor actions;
  torch::Tensor log_probs, values;  // an actor-critic's (values only, for a bootstrap request)
  int64_t version = 0;              // the parameters' version that answered
  algos::TensorMap state;           // with memory: the state after the step (empty without)
};

// One client's request as the predictors see it.
struct InferenceRequest {
  torch::Tensor observations;  // [rows, *obs_shape]
  algos::TensorMap state;      // with memory: the state before these observations (empty: initial)
  torch::Tensor starts;        // with memory: [rows], 1 where an episode starts (undefined: none)
  // The client's (an off-policy batch acts under its first request's).
  algos::ActingContext context;
  const at::Generator* generator = nullptr;  // the client's own (its thread's)
  bool values_only = false;                  // a bootstrap value, no action
};

// What the predictors answer with.
class PredictorNetwork {
 public:
  using Batch = std::vector<RequestService<InferenceRequest, Reply>::Asked>;
  virtual ~PredictorNetwork() = default;
  // Predictor p's answer to every request of `batch` (one or more): replies[i] for batch[i].
  virtual void answer(int predictor, const Batch& batch, std::vector<Reply>& replies) = 0;
};

// An on-policy learner's actor-critic, read by every predictor from `parameters` on `device`.
std::unique_ptr<PredictorNetwork> actor_critic_network(ActorCopy& parameters, torch::Device device);
// An off-policy learner's acting network: predictor p acts with replicas[p], which picks up the
// newest of `parameters` (flat copies of the learner's, as ActorReplica::assign takes them).
std::unique_ptr<PredictorNetwork> replica_network(std::vector<std::unique_ptr<algos::ActorReplica>>& replicas,
                                                  ParameterVersions<at::Tensor>& parameters);

class BatchedInference {
 public:
  // `predictors` threads call serve_batch(0 .. predictors - 1); `rows_per_request` is each
  // client's number of envs.
  BatchedInference(Workers& workers, std::unique_ptr<PredictorNetwork> network, int predictors, int clients,
                   int64_t rows_per_request, int max_rows, int queue_capacity);

  // Client c's Actor (one thread per client). An actor-critic's act() gives the extras
  // "log_probs" and "values", and bootstrap_value() its value. act() blocks until answered;
  // throws Stopped once the service is closed or the run stops.
  class Client final : public algos::Actor {
   public:
    algos::ActorOutput act(const algos::ActorInput& input, const algos::ActingContext& context) override;
    torch::Tensor bootstrap_value(const algos::ActorInput& input) override;
    // The parameter version of the first answer since the last call (-1: none): a segment's.
    int64_t take_first_version();

   private:
    friend class BatchedInference;
    Client(BatchedInference& service, int index) : service_(service), index_(index) {}
    Reply ask(const algos::ActorInput& input, const algos::ActingContext& context, bool values_only);
    BatchedInference& service_;
    int index_;
    at::Generator generator_;  // the asking thread's, from its first request on
    int64_t first_version_ = -1;
  };

  Client& client(int c) { return *clients_[static_cast<size_t>(c)]; }

  // Predictor p's turn: waits for requests, answers a batch of them. false once the requests are
  // closed and drained; true after an idle wait (a spare predictor is no error).
  bool serve_batch(int predictor);

  // No more requests: predictors answer what is queued, then serve_batch() returns false.
  void close() { service_.close(); }

  // charts/PPS (rows predicted per second of `seconds`), charts/prediction_batch_size (rows per
  // forward pass) and charts/prediction_queue_length.
  void add_metrics(algos::Metrics& metrics, double seconds) const;

 private:
  // What predictor p reuses from one batch to the next.
  struct Scratch {
    PredictorNetwork::Batch batch;
    std::vector<Reply> replies;
  };

  std::unique_ptr<PredictorNetwork> network_;
  RequestService<InferenceRequest, Reply> service_;
  std::vector<Scratch> scratch_;  // one per predictor
  std::vector<std::unique_ptr<Client>> clients_;
  std::atomic<int64_t> predicted_rows_{0}, forward_passes_{0};
};

}  // namespace concord::policies::runtime
