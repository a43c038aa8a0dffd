#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include <ATen/core/Generator.h>
#include <torch/types.h>

#include "concord/algos/actor.h"
#include "concord/policies/runtime/actor_copy.h"
#include "concord/policies/runtime/channel.h"
#include "concord/policies/runtime/request_service.h"
#include "concord/policies/runtime/workers.h"

namespace concord::policies::runtime {

// Inference as a service (GA3C's predictors, SEED RL's central inference): clients send their
// observations, predictor threads take as many requests as fit in `max_rows` rows and run one
// forward pass over them with the published parameters (an ActorCopy), then answer each client.
//
//   client c:     client(c).act(observations)  -> request queue -> one reply slot per client
//   predictor:    while (serve_batch()) {}        one batched forward pass per call
//
// Actions are drawn per request with the asking client's own generator, so what a client draws
// never depends on which other requests shared its forward pass: one client answered by one
// predictor draws exactly what its model would draw in line. A client has one request in flight.
// An answer: on the CPU, row for row (values only: actions and log_probs undefined), with a
// recurrent network's state after the step (empty without memory, and for values).
struct Reply {
  torch::Tensor actions, log_probs, values;
  int64_t version = 0;  // the parameters' version that answered
  algos::TensorMap state;
};

class BatchedInference {
 public:
  BatchedInference(Workers& workers, ActorCopy& parameters, int clients, int64_t rows_per_request, int max_rows,
                   int queue_capacity, torch::Device device);

  // Client c's Actor (one thread per client): the actor-critic's sample with extras "log_probs"
  // and "values", and its bootstrap value. Its act() blocks until answered; throws Stopped once
  // the service is closed.
  class Client final : public algos::Actor {
   public:
    algos::ActorOutput act(const algos::ActorInput& input, const algos::ActingContext& context) override;
    torch::Tensor bootstrap_value(const algos::ActorInput& input) override;
    // The parameter version of the first answer since the last call (-1: none): a segment's.
    int64_t take_first_version();

   private:
    friend class BatchedInference;
    Client(BatchedInference& service, int index);
    Reply ask(const algos::ActorInput& input, bool values_only);
    BatchedInference& service_;
    int index_;
    int64_t first_version_ = -1;
  };

  // One client's request as the predictors see it.
  struct Request {
    torch::Tensor observations;  // [rows, *obs_shape] on the CPU
    algos::TensorMap state;      // with memory: the state before these observations (empty: initial)
    torch::Tensor starts;        // with memory: [rows], 1 where an episode starts (undefined: none)
    bool values_only = false;
    at::Generator generator;  // the client's
  };

  Client& client(int c) { return *clients_[static_cast<size_t>(c)]; }

  // One predictor's turn: waits for requests, answers a batch of them. false once the requests
  // are closed and drained; true after an idle wait (a spare predictor is no error).
  bool serve_batch();

  // No more requests: predictors answer what is queued, then serve_batch() returns false.
  void close() { service_.close(); }

  // charts/PPS (rows predicted per second of `seconds`), charts/prediction_batch_size (rows per
  // forward pass) and charts/prediction_queue_length.
  void add_metrics(algos::Metrics& metrics, double seconds) const;

 private:
  ActorCopy& parameters_;
  torch::Device device_;
  RequestService<Request, Reply> service_;
  std::vector<std::unique_ptr<Client>> clients_;
  std::atomic<int64_t> predicted_rows_{0}, forward_passes_{0};
};

}  // namespace concord::policies::runtime
