#pragma once

#include <array>
#include <map>
#include <string>
#include <type_traits>

#include <torch/types.h>

#include "concord/core/tensor_map.h"

namespace concord::algos {

// The Experience layout of on-policy actor-critic algorithms (A2C, PPO): T consecutive steps of
// B environments, time-major. A distribution policy fills it from what the Actor and the
// VectorEnv produced; the Learner only reads it.
//
// Gymnasium semantics: terminated[t, b] means no bootstrap after step t; truncated[t, b] means
// bootstrap from V(final_observations[t, b]), the last observation of that episode, because after
// an auto-reset observations[t + 1, b] already belongs to the next episode. The policy stores
// observations only; the learner evaluates them with its own critic, which under a lagged policy is
// newer than the one that acted.
struct Rollout {
  torch::Tensor observations;        // [T, B, *obs_shape] in the env's dtype (uint8 grids stay uint8)
  torch::Tensor actions;             // [T, B] int64 (discrete) or [T, B, d] float (continuous)
  torch::Tensor log_probs;           // [T, B] log pi_behaviour(action | observation)
  torch::Tensor values;              // [T, B] V(observation) when acting
  torch::Tensor rewards;             // [T, B]
  torch::Tensor terminated;          // [T, B] 0/1 float
  torch::Tensor truncated;           // [T, B] 0/1 float
  torch::Tensor final_observations;  // [T, B, *obs_shape] where truncated, the episode's last observation
                                     //   (env's dtype); zeros elsewhere
  torch::Tensor bootstrap_value;     // [B] V(next_observations) when acting
  torch::Tensor next_observations;   // [B, *obs_shape] o_T, the observation after the last step (env's dtype):
                                     //   an off-policy correction bootstraps from its own V(o_T)

  // Acted by a network with memory only (both unset otherwise): what a learner re-runs each env's
  // sequence from. Not among fields(): a policy that joins envs' segments carries them itself
  // (policies/runtime/concat_envs.h); one that moves rollouts between processes in a wire format that
  // lacks them refuses a network with memory at start-up.
  core::TensorMap initial_state;  // the actor's state before step 0, each [B, ...]; empty: initial
  torch::Tensor episode_starts;   // [T, B] 0/1 float: observations[t, b] is the first of an episode

  int64_t num_steps() const { return rewards.size(0); }
  int64_t num_envs() const { return rewards.size(1); }

  static constexpr size_t kFields = 10;
  // Every field, in the order above, for code that treats them alike (copies, wire formats).
  std::array<torch::Tensor*, kFields> fields() { return fields_of(*this); }
  std::array<const torch::Tensor*, kFields> fields() const { return fields_of(*this); }
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
    for (auto& entry : copy.initial_state) entry.second = entry.second.clone();
    if (copy.episode_starts.defined()) copy.episode_starts = copy.episode_starts.clone();
    return copy;
  }

 private:
  // The one list of fields, for both constnesses.
  template <typename Self,
            typename Pointer = std::conditional_t<std::is_const_v<Self>, const torch::Tensor*, torch::Tensor*>>
  static std::array<Pointer, kFields> fields_of(Self& self) {
    return {&self.observations,    &self.actions,          &self.log_probs, &self.values,
            &self.rewards,         &self.terminated,       &self.truncated, &self.final_observations,
            &self.bootstrap_value, &self.next_observations};
  }
};

}  // namespace concord::algos
