#include "concord/algos/reward_scaler.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>
#include <c10/core/GradMode.h>

#include <sstream>
#include <string>
#include <utility>

#include "concord/algos/tensor_checks.h"
#include "concord/core/config_problems.h"

namespace concord::algos {
namespace {

constexpr const char* kFn = "RewardScaler::scale";
constexpr const char* kReturnsName = "reward_scaler/returns";
constexpr const char* kStatsPrefix = "reward_scaler/return_rms.";

nn::RunningMeanStd make_return_stats(const RewardScalerConfig& config) {
  nn::RunningMeanStdConfig stats;  // scalar returns; Gymnasium's pseudo-count
  stats.epsilon = config.epsilon;
  stats.clip = config.clip;
  return nn::RunningMeanStd(stats);
}

[[noreturn]] void corrupt(const std::string& problem) {
  throw core::CheckpointError(core::CheckpointError::Kind::kCorrupt, "", problem);
}

// The checkpoint's tensor `name`, which must exist and have `dims` dimensions.
const at::Tensor& checkpoint_tensor(const core::Checkpoint& checkpoint, const std::string& name, int64_t dims) {
  const auto found = checkpoint.tensors.find(name);
  if (found == checkpoint.tensors.end()) {
    throw core::CheckpointError(core::CheckpointError::Kind::kTensorMissing, "",
                                "tensor \"" + name + "\" is missing (saved without reward normalisation?)");
  }
  if (found->second.dim() != dims) {
    std::ostringstream out;
    out << "tensor \"" << name << "\" has shape " << found->second.sizes() << ", expected " << dims << " dimension(s)";
    corrupt(out.str());
  }
  return found->second;
}

}  // namespace

void RewardScalerConfig::validate() const {
  core::ConfigProblems problems;
  problems.check(gamma >= 0.0 && gamma <= 1.0, "gamma", gamma, "in [0, 1]");
  problems.check(epsilon > 0.0, "epsilon", epsilon, "> 0");
  problems.check(clip > 0.0, "clip", clip, "> 0");
  problems.throw_if_any("RewardScalerConfig");
}

RewardScaler::RewardScaler(RewardScalerConfig config)
    : config_(core::validated(std::move(config))),
      returns_(at::zeros({0}, at::kDouble)),
      return_stats_(make_return_stats(config_)) {}

at::Tensor RewardScaler::scale(const at::Tensor& rewards, const at::Tensor& terminated, const at::Tensor& truncated) {
  tensor_checks::check_rewards(kFn, rewards);
  tensor_checks::check_like_rewards(kFn, "terminated", terminated, rewards, /*is_flag=*/true);
  tensor_checks::check_like_rewards(kFn, "truncated", truncated, rewards, /*is_flag=*/true);
  c10::NoGradGuard no_grad;
  const int64_t steps = rewards.size(0);
  const int64_t envs = rewards.size(1);
  if (returns_.size(0) != envs) returns_ = at::zeros({envs}, at::kDouble);

  // The accumulators are a short sequential recursion over [T, B] scalars: plain loops on the
  // CPU, in float64, beat T rounds of tiny tensor operations.
  const at::Tensor r = rewards.to(at::kCPU, at::kDouble).contiguous();
  const at::Tensor ended =
      tensor_checks::as_bool(terminated).logical_or(tensor_checks::as_bool(truncated)).to(at::kCPU).contiguous();
  at::Tensor discounted = at::empty({steps, envs}, at::kDouble);
  const double* reward = r.data_ptr<double>();
  const bool* done = ended.data_ptr<bool>();
  double* out = discounted.data_ptr<double>();
  double* g = returns_.data_ptr<double>();
  for (int64_t t = 0; t < steps; ++t) {
    for (int64_t b = 0; b < envs; ++b) {
      const int64_t i = t * envs + b;
      g[b] = config_.gamma * g[b] + reward[i];
      out[i] = g[b];
      if (done[i]) g[b] = 0.0;
    }
  }

  return_stats_->update(discounted.reshape({-1}));
  const at::Tensor std = return_stats_->std().to(rewards.device(), rewards.scalar_type());
  return (rewards / std).clamp(-config_.clip, config_.clip);
}

void RewardScaler::save(core::Checkpoint& checkpoint) const {
  checkpoint.tensors[kReturnsName] = returns_.clone();
  for (const auto& buffer : return_stats_->named_buffers()) {
    checkpoint.tensors[kStatsPrefix + buffer.key()] = buffer.value().detach().clone();
  }
}

void RewardScaler::check(const core::Checkpoint& checkpoint) const {
  checkpoint_tensor(checkpoint, kReturnsName, 1);
  for (const auto& buffer : return_stats_->named_buffers()) {
    checkpoint_tensor(checkpoint, kStatsPrefix + buffer.key(), buffer.value().dim());
  }
}

void RewardScaler::load(const core::Checkpoint& checkpoint) {
  check(checkpoint);
  returns_ = checkpoint.tensors.at(kReturnsName).to(at::kCPU, at::kDouble).clone();
  c10::NoGradGuard no_grad;
  for (auto& buffer : return_stats_->named_buffers()) {
    buffer.value().copy_(checkpoint.tensors.at(kStatsPrefix + buffer.key()));
  }
}

bool RewardScaler::in_checkpoint(const core::Checkpoint& checkpoint) {
  const auto first = checkpoint.tensors.lower_bound("reward_scaler/");
  return first != checkpoint.tensors.end() && first->first.rfind("reward_scaler/", 0) == 0;
}

}  // namespace concord::algos
