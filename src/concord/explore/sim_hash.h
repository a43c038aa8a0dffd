#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <torch/types.h>

#include "concord/core/config_fields.h"
#include "concord/explore/observation_scaling.h"
#include "concord/explore/state_hash.h"

namespace concord::explore {

// How the simhash bonus hashes states (keys explore.simhash.<field>); ae_simhash takes its code
// length k from here too.
struct SimHashConfig {
  int64_t k = 64;                     // bits of the code: the granularity of the counts
  std::string preprocess = "bounds";  // g(s): "bounds" (ObservationScaling, with a bias) or "none"

  // Throws std::invalid_argument listing every bad field with its value.
  void validate() const;
  static const core::ConfigFields<SimHashConfig>& fields();
};

// SimHash (Charikar, 2002), as Tang et al. (2017) use it for counting:
//
//   phi(s) = sign(A g(s)),  A in R^{k x d} with i.i.d. standard normal entries
//
// bit j of the code is 1 where (A g(s))_j > 0 and 0 otherwise. A is drawn once from `seed`
// (LibTorch's CPU generator) and saved in checkpoints, so that a resumed run, and every rank of a
// multi-process run built from the same config, hashes identically. g is an optional
// ObservationScaling; without it the observation is hashed as it is (one-hot states, autoencoder
// codes). Immutable after construction (load() aside), so thread-safe.
class SimHash final : public StateHash {
 public:
  // Throws std::invalid_argument unless input_dim >= 1 and bits in [1, 1024].
  SimHash(int64_t input_dim, int64_t bits, uint64_t seed,
          std::optional<ObservationScaling> preprocessing = std::nullopt);

  void learn(const torch::Tensor&) override {}
  torch::Tensor codes(const torch::Tensor& observations) override;
  int64_t bits() const override { return projection_.size(0); }
  void save(core::Checkpoint& checkpoint, const std::string& prefix) const override;
  void load(const core::Checkpoint& checkpoint, const std::string& prefix) override;

  // A, [k, d] float32.
  const torch::Tensor& projection() const { return projection_; }

 private:
  torch::Tensor projection_;
  std::optional<ObservationScaling> preprocessing_;
};

}  // namespace concord::explore
