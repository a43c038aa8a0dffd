#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <torch/optim/adam.h>

#include "concord/core/config_fields.h"
#include "concord/envs/space.h"
#include "concord/explore/code_autoencoder.h"
#include "concord/explore/observation_scaling.h"
#include "concord/explore/sim_hash.h"
#include "concord/explore/state_hash.h"

namespace concord::explore {

// The autoencoder of AE-SimHash and how it trains (keys explore.ae.<field>).
struct AeSimHashConfig {
  int64_t code_size = 32;                 // D, sigmoid units of the code layer
  std::vector<int64_t> hidden_sizes{64};  // encoder layers (the decoder mirrors them)
  double noise = 0.3;                     // a of the U(-a, a) noise before the sigmoid
  double binary_penalty = 10.0;           // lambda of the term pushing b towards 0 or 1
  double learning_rate = 1e-3;            // Adam
  int64_t minibatch = 256;                // states per gradient step
  int64_t updates_per_batch = 1;          // gradient steps on each batch of visited states

  // Throws std::invalid_argument listing every bad field with its value.
  void validate() const;
  static const core::ConfigFields<AeSimHashConfig>& fields();
};

// AE-SimHash (Tang et al., 2017, section 2.3): a learned hash. The autoencoder trains online on
// the visited states (learn()), minimising
//
//   mean over the minibatch of  ||x - reconstruction||^2 + lambda / D * sum_i min((1 - b_i)^2, b_i^2)
//
// and a state's code is SimHash (k bits, fixed A [k, D]) of the rounded code layer round(b(s)).
// Observations are first scaled to [-1, 1] where the space is bounded (ObservationScaling without
// the bias). learn() and codes() hold one mutex: threads share one autoencoder.
class AeSimHash final : public StateHash {
 public:
  AeSimHash(const envs::Space& observation_space, const AeSimHashConfig& config, int64_t bits, uint64_t seed);

  void learn(const torch::Tensor& observations) override;
  torch::Tensor codes(const torch::Tensor& observations) override;
  int64_t bits() const override { return sim_hash_.bits(); }
  void save(core::Checkpoint& checkpoint, const std::string& prefix) const override;
  void load(const core::Checkpoint& checkpoint, const std::string& prefix) override;

  // The last loss learn() computed (0 before any).
  double last_loss() const;

 private:
  AeSimHashConfig config_;
  ObservationScaling scaling_;
  CodeAutoencoder autoencoder_;
  std::unique_ptr<torch::optim::Adam> optimizer_;
  SimHash sim_hash_;
  mutable std::mutex mutex_;
  double last_loss_ = 0.0;
};

}  // namespace concord::explore
