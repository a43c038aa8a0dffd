#pragma once

#include <vector>

#include <torch/torch.h>

#include "concord/algos/rollout.h"

namespace concord::policies {

// Rollouts of the same T side by side along the envs: one Rollout [T, sum of B], as one collector
// stepping all their envs would have filled it (the envs in the order given). What a learner fed
// by several collectors (actor processes, agents) learns from.
inline algos::Rollout concat_envs(const std::vector<const algos::Rollout*>& parts) {
  algos::Rollout joined;
  const auto fields = joined.fields();
  for (size_t field = 0; field < algos::Rollout::kFields; ++field) {
    std::vector<torch::Tensor> pieces;
    pieces.reserve(parts.size());
    for (const algos::Rollout* part : parts) pieces.push_back(*part->fields()[field]);
    *fields[field] = torch::cat(pieces, algos::Rollout::env_dim(field));
  }
  return joined;
}

}  // namespace concord::policies
