#pragma once

#include <array>

#include <torch/types.h>

namespace concord::algos {

// The Experience layout of on-policy actor-critic algorithms (A2C, PPO): T consecutive steps of
// B environments, time-major. A distribution policy fills it from what the Actor and the
// VectorEnv produced; the Learner only reads it.
//
// Gymnasium semantics: terminated[t, b] means no bootstrap after step t; truncated[t, b] means
// bootstrap from truncation_values[t, b] = V(final observation of that episode), because after
// an auto-reset observations[t + 1, b] already belongs to the next episode.
struct Rollout {
  torch::Tensor observations;       // [T, B, *obs_shape] in the env's dtype (uint8 grids stay uint8)
  torch::Tensor actions;            // [T, B] int64 (discrete) or [T, B, d] float (continuous)
  torch::Tensor log_probs;          // [T, B] log pi_behaviour(action | observation)
  torch::Tensor values;             // [T, B] V(observation) when acting
  torch::Tensor rewards;            // [T, B]
  torch::Tensor terminated;         // [T, B] 0/1 float
  torch::Tensor truncated;          // [T, B] 0/1 float
  torch::Tensor truncation_values;  // [T, B] V(final observation) where truncated, else 0
  torch::Tensor bootstrap_value;    // [B] V(next_observations) when acting
  torch::Tensor next_observations;  // [B, *obs_shape] o_T, the observation after the last step (env's dtype):
                                    //   an off-policy correction bootstraps from its own V(o_T)

  int64_t num_steps() const { return rewards.size(0); }
  int64_t num_envs() const { return rewards.size(1); }

  static constexpr size_t kFields = 10;
  // Every field, in the order above, for code that treats them alike (copies, wire formats).
  std::array<torch::Tensor*, kFields> fields() {
    return {&observations, &actions,   &log_probs,         &values,          &rewards,
            &terminated,   &truncated, &truncation_values, &bootstrap_value, &next_observations};
  }
  std::array<const torch::Tensor*, kFields> fields() const {
    return {&observations, &actions,   &log_probs,         &values,          &rewards,
            &terminated,   &truncated, &truncation_values, &bootstrap_value, &next_observations};
  }
  // The dimension that indexes the envs in field i of fields(): 1 for the [T, B, ...] fields, 0
  // for the last two, which hold one row per env.
  static int64_t env_dim(size_t field) { return field + 2 >= kFields ? 0 : 1; }
  // A deep copy: what a thread hands on when its own buffers will be reused (fields left
  // undefined stay undefined).
  Rollout clone() const {
    Rollout copy = *this;
    for (torch::Tensor* field : copy.fields()) {
      if (field->defined()) *field = field->clone();
    }
    return copy;
  }
};

}  // namespace concord::algos
