#pragma once

#include <atomic>
#include <cstdint>
#include <shared_mutex>
#include <utility>

#include "concord/algos/on_policy_learner.h"
#include "concord/nn/actor_critic.h"
#include "concord/nn/flat_parameters.h"

namespace concord::policies::runtime {

// A copy of the learner's network for threads that act while the learner updates: a separate
// network whose flat buffer (and buffers, such as observation statistics) publish() overwrites
// after an update, never while a reader holds it. The copy is what lets acting overlap learning
// without reading parameters that Adam is changing in place. Used by central_inference's
// predictors and async_learner's collector (which acts with a private copy of this copy).
//
//   learner thread:  update; publish(learner, updates)         exclusive, one flat copy
//   acting threads:  read([&](nn::ActorCritic& model) { ... })  shared, any number at once
//
// Thread-safe.
class ActorCopy {
 public:
  // Clones the learner's network. Throws std::logic_error if the clone's flat size differs.
  explicit ActorCopy(algos::OnPolicyLearner& learner);

  // Copies the learner's parameters and buffers into the copy, and records them as `version`.
  void publish(algos::OnPolicyLearner& learner, int64_t version);

  // Copies this copy's parameters, buffers and version into `target`: for a thread that acts
  // for long stretches with a private network, so that it never holds up a publish.
  void copy_to(ActorCopy& target);

  // The version a read started now would see.
  int64_t version() const { return version_.load(); }

  // Runs body(model, version) while no publish can change the copy; returns what body returns.
  template <typename Body>
  auto read(Body&& body) {
    std::shared_lock<std::shared_mutex> reading(mutex_);
    return std::forward<Body>(body)(model_, version_.load());
  }

 private:
  // Copies `values` (a flat parameter buffer) and source's buffers into this copy, as `version`;
  // the caller holds mutex_ exclusively.
  void assign(const torch::Tensor& values, nn::ActorCritic& source, int64_t version);

  std::shared_mutex mutex_;  // shared: readers; exclusive: a publish
  nn::ActorCritic model_;
  nn::FlatParameters parameters_;
  std::atomic<int64_t> version_{0};
};

}  // namespace concord::policies::runtime
