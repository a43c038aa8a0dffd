#pragma once

#include <torch/types.h>

#include "concord/nn/actor_critic.h"

namespace concord::policies::runtime {

// Where a collector's actions come from (RolloutCollector): the learner's network in line, a
// replica of it, or a batched inference service on other threads (BatchedInference). The
// collector is the same whichever acts; only the policy's wiring picks.
class ActingSource {
 public:
  virtual ~ActingSource() = default;
  // a ~ pi(. | o), log pi(a | o) and V(o) for a batch of observations, drawn from the calling
  // thread's generator.
  virtual nn::ActResult act(const torch::Tensor& observations) = 0;
  // V(o) only: a rollout's bootstrap value.
  virtual torch::Tensor value(const torch::Tensor& observations) = 0;
};

// An actor-critic acting in line, on the calling thread.
class InlineActing final : public ActingSource {
 public:
  explicit InlineActing(nn::ActorCritic& model) : model_(model) {}
  nn::ActResult act(const torch::Tensor& observations) override { return model_->act(observations); }
  torch::Tensor value(const torch::Tensor& observations) override { return model_->value(observations); }

 private:
  nn::ActorCritic& model_;
};

}  // namespace concord::policies::runtime
