#pragma once

#include <vector>

#include <torch/torch.h>

#include "concord/algos/rollout.h"

namespace concord::policies::runtime {

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
  // A network with memory: each part's state at its start and its episode starts, side by side
  // too. A part acted from the initial state (an empty map) contributes zeros.
  const algos::Rollout* with_state = nullptr;
  for (const algos::Rollout* part : parts) {
    if (!part->initial_state.empty()) with_state = part;
  }
  if (parts.front()->episode_starts.defined()) {
    std::vector<torch::Tensor> starts;
    for (const algos::Rollout* part : parts) starts.push_back(part->episode_starts);
    joined.episode_starts = torch::cat(starts, 1);
  }
  if (with_state != nullptr) {
    for (const auto& [name, example] : with_state->initial_state) {
      std::vector<torch::Tensor> rows;
      for (const algos::Rollout* part : parts) {
        const auto found = part->initial_state.find(name);
        std::vector<int64_t> shape = example.sizes().vec();
        shape[0] = part->num_envs();
        rows.push_back(found != part->initial_state.end() ? found->second : torch::zeros(shape, example.options()));
      }
      joined.initial_state[name] = torch::cat(rows);
    }
  }
  return joined;
}

}  // namespace concord::policies::runtime
