#pragma once

#include <ATen/core/Tensor.h>

#include "concord/core/checkpoint.h"
#include "concord/nn/running_mean_std.h"

namespace concord::algos {

// How a RewardScaler scales. The defaults are Gymnasium's NormalizeReward with Stable-Baselines3
// VecNormalize's clip (CleanRL clips to the same +-10 with a TransformReward wrapper).
struct RewardScalerConfig {
  double gamma = 0.99;    // discount of the running return whose std scales rewards: the learner's
  double epsilon = 1e-8;  // added to the return's variance under the square root
  double clip = 10.0;     // scaled rewards are clamped to [-clip, clip]

  // Throws std::invalid_argument listing every bad field with its value.
  void validate() const;
};

// Reward normalisation for learners of [T, B] rollouts, as Gymnasium's NormalizeReward and SB3's
// VecNormalize do it: rewards are divided by the running standard deviation of the discounted
// return, not centred, so their sign (and the meaning of a terminal state) survives.
//
//   for t < T:  G[b] = gamma * G[b] + r[t, b]            (one accumulator per environment)
//               returns[t, b] = G[b]
//               G[b] = 0 where terminated[t, b] or truncated[t, b]
//   return_stats.update(every returns[t, b])            (a scalar RunningMeanStd, Chan's update)
//   scaled[t, b] = clamp(r[t, b] / sqrt(var + epsilon), -clip, clip)
//
// The accumulators G [B] carry over from one rollout to the next, as the environments' episodes
// do; they restart at zero when B changes. One difference from the wrappers, which update the
// statistics after every environment step: here the whole rollout updates them before any of its
// rewards is scaled, so all rewards of one rollout share one scale.
//
// Called by the learner inside update(), before returns and advantages, so the value function
// learns returns of scaled rewards (and the rollout's values, bootstrap and truncation values,
// which that value function produced, are on the same scale). Not thread-safe.
class RewardScaler {
 public:
  // Validates the config. Throws std::invalid_argument.
  explicit RewardScaler(RewardScalerConfig config);

  // Scaled rewards [T, B] in rewards' dtype and on its device. rewards, terminated and truncated
  // are [T, B] (0/1 or bool flags) on any device. Throws std::invalid_argument naming a
  // mis-shaped argument.
  at::Tensor scale(const at::Tensor& rewards, const at::Tensor& terminated, const at::Tensor& truncated);

  // The per-environment discounted returns G, float64 [B] on the CPU; empty before the first
  // scale().
  const at::Tensor& returns() const { return returns_; }
  // The statistics of the discounted returns seen so far.
  const nn::RunningMeanStd& return_stats() const { return return_stats_; }
  const RewardScalerConfig& config() const { return config_; }

  // Tensors "reward_scaler/returns" and "reward_scaler/return_rms.<mean|var|count>".
  void save(core::Checkpoint& checkpoint) const;
  // Throws core::CheckpointError (kTensorMissing or kCorrupt) if `checkpoint` lacks one of
  // save()'s tensors or holds one of the wrong shape; changes nothing.
  void check(const core::Checkpoint& checkpoint) const;
  // check(), then replaces the state with the checkpoint's.
  void load(const core::Checkpoint& checkpoint);
  // Whether `checkpoint` holds any reward-scaler tensor.
  static bool in_checkpoint(const core::Checkpoint& checkpoint);

 private:
  RewardScalerConfig config_;
  at::Tensor returns_;
  nn::RunningMeanStd return_stats_;
};

}  // namespace concord::algos
