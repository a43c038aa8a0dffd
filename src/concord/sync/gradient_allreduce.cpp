#include "concord/sync/gradient_allreduce.h"

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/utils/lambda_post_hook.h>
#include <torch/csrc/autograd/variable.h>

#include "concord/core/config_problems.h"

namespace concord::sync {

// The gradient accumulators of the parameters: autograd holds them weakly, so without these
// references they (and the hooks on them) would be rebuilt at every backward.
struct GradientAllreduce::Hooks {
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators;
};

void GradientAllreduceConfig::validate() const {
  core::ConfigProblems problems;
  problems.check(bucket_kb >= 0, "bucket_kb", bucket_kb, ">= 0");
  problems.throw_if_any("sync.allreduce config");
}

const core::ConfigFields<GradientAllreduceConfig>& GradientAllreduceConfig::fields() {
  static const core::ConfigFields<GradientAllreduceConfig> kFields = {
      {"bucket_kb", &GradientAllreduceConfig::bucket_kb,
       "Gradient bucket size in KiB: a bucket's allreduce overlaps the backward of the next (0: one bucket)"},
  };
  return kFields;
}

GradientAllreduce::GradientAllreduce(comm::Communicator& communicator, int64_t bucket_bytes)
    : communicator_(communicator), bucket_bytes_(bucket_bytes), hooks_(std::make_unique<Hooks>()) {}

GradientAllreduce::~GradientAllreduce() = default;

void GradientAllreduce::attach(nn::FlatParameters& parameters) {
  parameters_ = &parameters;
  const std::vector<torch::Tensor>& tensors = parameters.parameters();
  const int64_t element_bytes = parameters.values().element_size();

  // Buckets from the last parameter backwards: backward produces the last layer's gradient first.
  std::vector<size_t> bucket_of(tensors.size());
  int64_t end = parameters.numel();
  int parameters_in_bucket = 0;
  for (size_t i = tensors.size(); i-- > 0;) {
    const int64_t begin = parameters.offset(i);
    bucket_of[i] = bucket_ranges_.size();
    ++parameters_in_bucket;
    const bool full = bucket_bytes_ > 0 && (end - begin) * element_bytes >= bucket_bytes_;
    if (full || i == 0) {
      bucket_ranges_.emplace_back(begin, end);
      bucket_parameters_.push_back(parameters_in_bucket);
      end = begin;
      parameters_in_bucket = 0;
    }
  }
  pending_ = bucket_parameters_;
  requests_.resize(bucket_ranges_.size());

  for (size_t i = 0; i < tensors.size(); ++i) {
    std::shared_ptr<torch::autograd::Node> accumulator = torch::autograd::impl::grad_accumulator(tensors[i]);
    const size_t bucket = bucket_of[i];
    accumulator->add_post_hook(std::make_unique<torch::autograd::utils::LambdaPostHook>(
        [this, bucket](const torch::autograd::variable_list& outputs, const torch::autograd::variable_list&) {
          on_gradient_ready(bucket);
          return outputs;
        }));
    hooks_->accumulators.push_back(std::move(accumulator));
  }

  // Every replica starts from rank 0's parameters.
  torch::NoGradGuard no_grad;
  communicator_.broadcast(parameters.values().detach(), 0);
}

void GradientAllreduce::on_gradient_ready(size_t bucket) {
  if (--pending_[bucket] == 0) launch_ready_buckets(false);
}

void GradientAllreduce::launch_ready_buckets(bool force) {
  while (next_to_launch_ < bucket_ranges_.size() && (force || pending_[next_to_launch_] <= 0)) {
    const auto [begin, end] = bucket_ranges_[next_to_launch_];
    const torch::Tensor slice = parameters_->gradient().narrow(0, begin, end - begin);
    stats_.bytes += slice.numel() * slice.element_size();
    requests_[next_to_launch_] = communicator_.allreduce_async(slice, comm::ReduceOp::kSum);
    ++next_to_launch_;
  }
}

void GradientAllreduce::synchronize_gradients() {
  // Parameters that took no part in the loss fire no hook; their (zero) gradients still join.
  launch_ready_buckets(true);
  for (std::unique_ptr<comm::Request>& request : requests_) {
    request->wait();
    request.reset();
  }
  parameters_->gradient().div_(communicator_.world_size());
  pending_ = bucket_parameters_;
  next_to_launch_ = 0;
  ++stats_.rounds;
}

std::unique_ptr<SyncStrategy> make_gradient_allreduce(const SyncContext& context,
                                                      const GradientAllreduceConfig& config) {
  config.validate();
  return std::make_unique<GradientAllreduce>(context.communicator, config.bucket_kb * 1024);
}

}  // namespace concord::sync
