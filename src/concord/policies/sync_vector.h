#pragma once

#include <memory>

#include "concord/policies/policy.h"
#include "concord/policies/policy_context.h"

namespace concord::policies {

// The `sync_vector` distribution policy (PAAC, Clemente et al., 2017): the loop of `single`
// (one batched forward pass for all envs, one update every T steps) over a VectorEnv whose
// env.num_threads threads step the envs. PAAC's structure is exactly that loop with a
// multi-threaded engine, so this is a SinglePolicy over such an engine, not a class of its own.
std::unique_ptr<Policy> make_sync_vector_policy(const PolicyContext& context);

}  // namespace concord::policies
