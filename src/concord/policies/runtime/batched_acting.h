#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <ATen/core/Tensor.h>

#include "concord/algos/off_policy_learner.h"
#include "concord/policies/runtime/channel.h"
#include "concord/policies/runtime/parameter_versions.h"
#include "concord/policies/runtime/request_service.h"
#include "concord/policies/runtime/workers.h"

namespace concord::policies::runtime {

// An off-policy algorithm's acting as a service (SEED RL's central inference): clients send
// observations, and predictor threads, each with a network copy of its own (an ActorReplica),
// take as many requests as fit in `max_rows` rows and answer them with one act().
//
//   client c:     client(c).act(observations, context)  -> request queue -> client c's reply slot
//   predictor p:  while (serve_batch(p)) {}                 one act() per call
//
// Before each batch a predictor picks up the newest published parameters (a flat copy of the
// learner's, as ActorReplica::assign takes it) if they changed. A batch acts under the context of
// its oldest request: the requests of one batch differ only in global_step, by the steps in
// flight, so clients should all explore alike (actor 0 of 1). Actions are drawn from the
// predictor's generator. A client has one request in flight.
class BatchedActing {
 public:
  // One predictor per replica; `rows_per_request` is each client's number of envs.
  BatchedActing(Workers& workers, std::vector<std::unique_ptr<algos::ActorReplica>>& replicas,
                ParameterVersions<at::Tensor>& parameters, int clients, int64_t rows_per_request, int max_rows,
                int queue_capacity);

  // Client c's Actor (one thread per client). act() blocks until answered; throws Stopped once the
  // run stops.
  class Client final : public algos::Actor {
   public:
    algos::ActorOutput act(const algos::ActorInput& input, const algos::ActingContext& context) override;

   private:
    friend class BatchedActing;
    Client(BatchedActing& service, int index) : service_(service), index_(index) {}
    BatchedActing& service_;
    int index_;
  };
  Client& client(int c) { return *clients_[static_cast<size_t>(c)]; }

  // Predictor p's turn: waits for requests, answers a batch of them. false once the requests are
  // closed and drained; true after an idle wait (a spare predictor is no error).
  bool serve_batch(int predictor);

 private:
  struct Request {
    torch::Tensor observations;  // [rows, *obs_shape]
    algos::ActingContext context;
  };

  std::vector<std::unique_ptr<algos::ActorReplica>>& replicas_;
  std::vector<int64_t> versions_;  // the parameters' version each predictor holds (-1: none)
  ParameterVersions<at::Tensor>& parameters_;
  RequestService<Request, torch::Tensor> service_;
  std::vector<std::unique_ptr<Client>> clients_;
};

}  // namespace concord::policies::runtime
