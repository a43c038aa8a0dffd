#include "concord/algos/actor.h"

#include <stdexcept>

namespace concord::algos {

torch::Tensor Actor::bootstrap_value(const ActorInput& /*input*/) {
  throw std::logic_error("this actor has no critic to bootstrap a rollout from; an on-policy learner's actor has one");
}

}  // namespace concord::algos
