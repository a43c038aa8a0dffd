#include "concord/policies/runtime/actor_copy.h"

#include <mutex>
#include <stdexcept>
#include <string>

#include <torch/torch.h>

namespace concord::policies::runtime {

ActorCopy::ActorCopy(algos::OnPolicyLearner& learner)
    : model_(std::dynamic_pointer_cast<nn::ActorCriticImpl>(learner.model()->clone())), parameters_(*model_) {
  if (parameters_.numel() != learner.flat_parameters().numel()) {
    throw std::logic_error("actor copy: the clone has " + std::to_string(parameters_.numel()) +
                           " parameters but the learner " + std::to_string(learner.flat_parameters().numel()));
  }
}

void ActorCopy::assign(const torch::Tensor& values, nn::ActorCritic& source, int64_t version) {
  torch::NoGradGuard no_grad;
  parameters_.values().copy_(values);
  // Buffers (observation statistics, when the learner normalises observations) live outside the
  // flat parameter buffer.
  const auto source_buffers = source->named_buffers();
  for (auto& buffer : model_->named_buffers()) buffer.value().copy_(source_buffers[buffer.key()]);
  version_.store(version);
}

void ActorCopy::publish(algos::OnPolicyLearner& learner, int64_t version) {
  std::unique_lock<std::shared_mutex> writing(mutex_);
  nn::ActorCritic source = learner.model();
  assign(learner.flat_parameters().values(), source, version);
}

void ActorCopy::copy_to(ActorCopy& target) {
  std::shared_lock<std::shared_mutex> reading(mutex_);
  std::unique_lock<std::shared_mutex> writing(target.mutex_);
  target.assign(parameters_.values(), model_, version_.load());
}

}  // namespace concord::policies::runtime
