#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "concord/core/tensor_map.h"

namespace concord::algos {

// Named tensors: Experience as an algorithm declares it, a batch of transitions, the fields of
// a replay sample, a buffer's saved state (the tensors of a core::Checkpoint are the same type;
// core/tensor_map.h says why its lookups take literals as they are).
using TensorMap = core::TensorMap;

// The fields of one environment step of B environments, as every collecting policy hands it to
// an off-policy learner (OffPolicyLearner::observe), each with leading dimension B:
//   observations       o_t, in the env's dtype (uint8 grids stay uint8)
//   actions            a_t as the actor chose it (int64 [B], or float [B, d] unclipped)
//   rewards            r_t, float
//   terminated         float 0/1: the episode ended; no bootstrap after it
//   truncated          float 0/1: a time limit cut the episode; bootstrap from next_observations
//   next_observations  o_{t+1}, except where the step ended an episode, where it is that
//                      episode's final observation (Gymnasium's info["final_observation"]),
//                      because after the same-step auto-reset o_{t+1} starts the next episode
namespace transition {
inline constexpr const char* kObservations = "observations";
inline constexpr const char* kActions = "actions";
inline constexpr const char* kRewards = "rewards";
inline constexpr const char* kTerminated = "terminated";
inline constexpr const char* kTruncated = "truncated";
inline constexpr const char* kNextObservations = "next_observations";
// Optional, together: the acting network's own estimates for each transition, [B] float each
// (Ape-X's actors, ActorReplica::priority_inputs), from which a prioritised replay starts the
// transition at its TD error (for a one-step or an n-step target alike); absent, at its maximum.
inline constexpr const char* kActingQ = "acting_q";                   // Q(o_t, a_t)
inline constexpr const char* kActingNextValue = "acting_next_value";  // max_a Q(next_observations_t, a)
}  // namespace transition

// Helpers that treat every field of an Experience alike, so that no policy enumerates fields by
// hand. Undefined tensors stay undefined.

// `t` on `device`: `t` itself where it already is, without dispatching an operation (a step's
// tensors are a few rows, and the call costs more than they do); a copy there otherwise.
at::Tensor on_device(const at::Tensor& t, c10::Device device);

// Every field moved (copied if `copy`) to `device`.
TensorMap to_device(const TensorMap& experience, c10::Device device, bool copy = false);
// A deep copy: what a thread hands on when its own buffers will be reused.
TensorMap clone(const TensorMap& experience);
// Rows [start, start + length) of dimension `dim` of every field (views).
TensorMap slice(const TensorMap& experience, int64_t dim, int64_t start, int64_t length);
// Field-wise concatenation along `dim`. Throws std::invalid_argument if the parts do not have
// the same field names.
TensorMap cat(const std::vector<TensorMap>& parts, int64_t dim);
// The size of dimension `dim`, which every defined field must share. Throws
// std::invalid_argument naming the first field that differs, or if no field is defined.
int64_t common_size(const TensorMap& experience, int64_t dim);

}  // namespace concord::algos
