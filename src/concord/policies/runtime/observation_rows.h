#pragma once

#include <cstdint>
#include <initializer_list>
#include <vector>

#include <torch/types.h>

#include "concord/envs/space.h"
#include "concord/envs/vector_env.h"

namespace concord::policies::runtime {

// Observations cross from the vector engine into tensors here, in their own dtype: float32 for
// classic control, uint8 for grids and pixels, which stay uint8 in every buffer and rollout until
// the model converts them (nn::ActorCritic accepts any dtype).

// The tensor dtype of a space's elements.
torch::ScalarType scalar_type(envs::Dtype dtype);

// [*leading, *observation_space.tensor_shape()]: the shape of observations batched along the
// leading dimensions, e.g. {count} for a batch, {T, B} for a rollout.
std::vector<int64_t> observation_batch_shape(const envs::Space& observation_space,
                                             std::initializer_list<int64_t> leading);

// A view (no copy) of `count` consecutive observation rows the engine owns, e.g. a Batch's
// observations or final_observations: valid only until the engine writes them again.
torch::Tensor observation_view(const envs::BatchedEnvs& env, const void* rows, int64_t count);

}  // namespace concord::policies::runtime
