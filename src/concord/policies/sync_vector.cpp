#include "concord/policies/sync_vector.h"

#include "concord/policies/single.h"

namespace concord::policies {

std::unique_ptr<Policy> make_sync_vector_policy(const PolicyContext& context) {
  return std::make_unique<SinglePolicy>(std::make_unique<envs::VectorEnv>(context.env_config), context.learner,
                                        context.device, context.bonus);
}

}  // namespace concord::policies
