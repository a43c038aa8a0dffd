#include "concord/policies/sync_vector.h"

#include <stdexcept>
#include <string>

#include "concord/policies/single.h"

namespace concord::policies {

std::unique_ptr<Policy> make_sync_vector_policy(const PolicyContext& context) {
  // Refused here, in this policy's name, before the envs exist (`single`'s loop would name itself).
  if (context.env_config.batch_size != 0) {
    throw std::invalid_argument("policy 'sync_vector' steps all environments together: set env.batch_size = 0 (got " +
                                std::to_string(context.env_config.batch_size) + ")");
  }
  return std::make_unique<SinglePolicy>(std::make_unique<envs::VectorEnv>(context.env_config), context.learner,
                                        context.device, context.bonus);
}

}  // namespace concord::policies
