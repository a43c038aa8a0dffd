#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include "concord/envs/env.h"

namespace concord::envs {

// A batch of results: `size` rows, each the outcome of one env's reset or step. Row-major,
// contiguous, owned by the VectorEnv (see the validity notes on step() and recv()).
//
// Observations are rows of obs_dim elements of obs_dtype (the observation space's dtype): read
// them through observations_as<float>() or observations_as<uint8_t>(), which check the dtype.
struct Batch {
  int64_t size = 0;
  int64_t obs_dim = 0;
  Dtype obs_dtype = Dtype::kFloat32;
  const int32_t* env_ids = nullptr;          // [size] which env each row belongs to.
  const void* observations = nullptr;        // [size, obs_dim] next observation (after an
                                             //   auto-reset: the new episode's first).
  const float* rewards = nullptr;            // [size]
  const uint8_t* terminated = nullptr;       // [size] 0/1
  const uint8_t* truncated = nullptr;        // [size] 0/1
  const uint8_t* has_final = nullptr;        // [size] 1 where the episode ended this step.
  const void* final_observations = nullptr;  // [size, obs_dim] last observation of the
                                             //   ended episode; valid where has_final.
  const float* episode_returns = nullptr;    // [size] return of the ended episode; 0 elsewhere.
  const int32_t* episode_lengths = nullptr;  // [size] its length in steps; 0 elsewhere.

  // The observations as `Element`s; throws std::logic_error when obs_dtype holds another type.
  template <typename Element>
  const Element* observations_as() const {
    return static_cast<const Element*>(checked<Element>(observations));
  }
  template <typename Element>
  const Element* final_observations_as() const {
    return static_cast<const Element*>(checked<Element>(final_observations));
  }

 private:
  template <typename Element>
  const void* checked(const void* rows) const {
    constexpr Dtype kWanted = dtype_of<Element>();
    if (obs_dtype != kWanted) {
      throw std::logic_error(std::string("Batch: observations are ") + dtype_name(obs_dtype) + ", not " +
                             dtype_name(kWanted));
    }
    return rows;
  }
};

// N environments reset and stepped together, one Batch per call: what collectors step. VectorEnv
// steps them on this process's threads; a policy may step them elsewhere (seed_rl's actor ranks).
// The sync API of VectorEnv, whose comments hold the details; a Batch is valid until the next call.
class BatchedEnvs {
 public:
  virtual ~BatchedEnvs() = default;
  virtual const EnvSpec& spec() const = 0;
  virtual int64_t num_envs() const = 0;
  // Rows per Batch: num_envs(), or fewer for an asynchronous VectorEnv (which collectors refuse).
  virtual int64_t batch_size() const = 0;
  virtual bool is_async() const = 0;
  virtual int64_t obs_dim() const = 0;
  virtual int64_t obs_bytes() const = 0;  // bytes of one observation
  virtual int64_t act_dim() const = 0;    // floats per action for a Box action space; 1 for Discrete
  // Resets every env; `seed` reseeds them (env i with seed + i), as VectorEnv::reset does.
  virtual Batch reset(std::optional<uint64_t> seed = std::nullopt) = 0;
  // Steps every env with its discrete action, or its act_dim() floats.
  virtual Batch step(const int64_t* actions) = 0;
  virtual Batch step(const float* actions) = 0;
};

}  // namespace concord::envs
