#pragma once

#include <cstdint>
#include <vector>

#include <torch/nn/cloneable.h>
#include <torch/nn/pimpl.h>

namespace concord::nn {

// How to build a RunningMeanStd. The defaults are Gymnasium's RunningMeanStd and
// NormalizeObservation, with Stable-Baselines3's VecNormalize clip (Gymnasium does not clip;
// CleanRL clips to the same +-10 with a TransformObservation wrapper).
struct RunningMeanStdConfig {
  // One sample's shape, without the batch dimension; empty for scalars.
  std::vector<int64_t> shape;
  // Pseudo-count the statistics start with (mean 0, var 1), so the first batch dominates them.
  double initial_count = 1e-4;
  // Added to var under the square root, so a constant input does not divide by zero.
  double epsilon = 1e-8;
  // normalize() clamps to [-clip, clip].
  double clip = 10.0;

  // Throws std::invalid_argument listing every bad field with its value.
  void validate() const;
};

// Running elementwise mean and variance of a stream of batches, and normalisation by them.
//
//   update(batch [N, *shape]):  Chan et al.'s parallel combination of (count, mean, var) with the
//                               batch's own (N, mean, population var), in the buffers' dtype;
//                               exact for any split of the stream into batches.
//   normalize(x [..., *shape]): clamp((x - mean) / sqrt(var + epsilon), -clip, clip), in x's dtype
//                               and on x's device.
//
// The statistics are registered buffers "mean" [*shape], "var" [*shape] and "count" (a 0-dim
// tensor), float64 (unless to() converts them), so that named_buffers(), to() and clone() carry
// them with a model.
// Grad mode does not matter: update() records no graph. Concurrent normalize() calls are safe
// while no thread calls update().
class RunningMeanStdImpl : public torch::nn::Cloneable<RunningMeanStdImpl> {
 public:
  // Validates the config (see RunningMeanStdConfig::validate) and sets mean 0, var 1.
  explicit RunningMeanStdImpl(RunningMeanStdConfig config);

  // (Re)registers the buffers at their initial values.
  void reset() override;

  // Folds a batch of N >= 1 samples [N, *shape] (any dtype, any device) into the statistics.
  // Throws std::invalid_argument for another shape or an empty batch.
  void update(const torch::Tensor& batch);
  // The normalised input; see above. Throws std::invalid_argument if x does not end in *shape.
  torch::Tensor normalize(const torch::Tensor& x) const;

  const torch::Tensor& mean() const { return mean_; }
  const torch::Tensor& var() const { return var_; }
  // sqrt(var + epsilon), float64 [*shape]: what normalize() divides by.
  torch::Tensor std() const;
  double count() const;
  const RunningMeanStdConfig& config() const { return config_; }

 private:
  RunningMeanStdConfig config_;
  torch::Tensor mean_;
  torch::Tensor var_;
  torch::Tensor count_;
};
TORCH_MODULE(RunningMeanStd);

}  // namespace concord::nn
