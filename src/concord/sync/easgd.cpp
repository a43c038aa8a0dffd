#include "concord/sync/easgd.h"

#include <stdexcept>

#include <torch/torch.h>

#include "concord/core/checkpoint.h"
#include "concord/core/checkpoint_fields.h"
#include "concord/core/config_problems.h"
#include "concord/sync/payload.h"

namespace concord::sync {
namespace {

// Tags of the asynchronous exchange: worker -> rank 0, rank 0 -> worker.
constexpr int kWorkerToCentreTag = 0x45410;
constexpr int kCentreToWorkerTag = 0x45411;

}  // namespace

const core::ConfigFields<EasgdConfig>& EasgdConfig::fields() {
  static const core::ConfigFields<EasgdConfig> kFields = {
      {"alpha", &EasgdConfig::alpha, "Elastic coefficient; synchronous needs workers * alpha <= 1"},
      {"tau", &EasgdConfig::tau, "Steps between elastic exchanges with the centre variable"},
      {"asynchronous", &EasgdConfig::asynchronous,
       "The asynchronous rule: workers meet the centre (on rank 0) one at a time"},
      {"momentum", &EasgdConfig::momentum, "EAMSGD's Nesterov momentum delta (0: plain EASGD)"},
  };
  return kFields;
}

void EasgdConfig::validate(int workers) const {
  core::ConfigProblems problems;
  problems.check(alpha > 0.0 && alpha < 1.0, "alpha", alpha, "in (0, 1)");
  if (!asynchronous && alpha > 0.0 && workers * alpha > 1.0) {
    problems.add("alpha=" + std::to_string(alpha) + " must be <= 1 / workers = " + std::to_string(1.0 / workers) +
                 " with " + std::to_string(workers) + " workers when synchronous");
  }
  problems.check(tau >= 1, "tau", tau, ">= 1");
  problems.check(momentum >= 0.0 && momentum < 1.0, "momentum", momentum, "in [0, 1)");
  problems.throw_if_any("sync.easgd config");
}

Easgd::Easgd(comm::Communicator& communicator, EasgdConfig config) : communicator_(communicator), config_(config) {
  config_.validate(communicator_.world_size());
}

void Easgd::attach(nn::FlatParameters& parameters) {
  parameters_ = &parameters;
  torch::NoGradGuard no_grad;
  communicator_.broadcast(parameters.values(), 0);
  stats_.bytes += payload_bytes(parameters.values());
  centre_ = parameters.values().detach().clone();
  velocity_ = torch::zeros_like(centre_);
}

void Easgd::synchronize_gradients() {
  if (config_.momentum == 0.0) return;
  // Nesterov momentum as a gradient transform: the optimiser's plain step x <- x - eta (g + delta v)
  // is then EAMSGD's local step.
  const torch::Tensor& gradient = parameters_->gradient();
  velocity_.mul_(config_.momentum).add_(gradient);
  gradient.add_(velocity_, config_.momentum);
}

void Easgd::after_step() {
  if (++steps_ % config_.tau != 0) return;
  torch::NoGradGuard no_grad;
  if (config_.asynchronous) {
    asynchronous_exchange();
  } else {
    synchronous_exchange();
  }
  ++stats_.rounds;
}

void Easgd::synchronous_exchange() {
  const torch::Tensor& x = parameters_->values();
  torch::Tensor difference = x - centre_;
  x.sub_(difference, config_.alpha);
  communicator_.allreduce(difference, comm::ReduceOp::kSum);
  stats_.bytes += payload_bytes(difference);
  centre_.add_(difference, config_.alpha);
}

void Easgd::asynchronous_exchange() {
  const torch::Tensor& x = parameters_->values();
  if (communicator_.rank() != 0) {
    torch::Tensor mine = x.detach().clone();
    communicator_.send(mine, 0, kWorkerToCentreTag);
    communicator_.recv(centre_, 0, kCentreToWorkerTag);
    stats_.bytes += payload_bytes(mine);
    x.sub_(mine - centre_, config_.alpha);
    return;
  }
  torch::Tensor theirs = torch::empty_like(centre_);
  for (int worker = 1; worker < communicator_.world_size(); ++worker) {
    communicator_.recv(theirs, worker, kWorkerToCentreTag);
    communicator_.send(centre_, worker, kCentreToWorkerTag);
    stats_.bytes += payload_bytes(centre_);
    centre_.add_(theirs - centre_, config_.alpha);
  }
  const torch::Tensor difference = x - centre_;
  x.sub_(difference, config_.alpha);
  centre_.add_(difference, config_.alpha);
}

void Easgd::save(core::Checkpoint& checkpoint) const {
  save_sync_stats(checkpoint, stats_);
  checkpoint.metadata["sync"]["steps"] = steps_;
  checkpoint.tensors["sync.centre"] = centre_.detach().clone();
  checkpoint.tensors["sync.velocity"] = velocity_.detach().clone();
}

void Easgd::load(const core::Checkpoint& checkpoint) {
  const torch::Tensor centre = core::checkpoint_tensor(checkpoint, "sync.centre", centre_);
  const torch::Tensor velocity = core::checkpoint_tensor(checkpoint, "sync.velocity", velocity_);
  const SyncStats stats = load_sync_stats(checkpoint);
  steps_ = core::metadata_int(checkpoint, "sync", "steps");
  stats_ = stats;
  torch::NoGradGuard no_grad;
  centre_.copy_(centre);
  velocity_.copy_(velocity);
}

std::unique_ptr<SyncStrategy> make_easgd(const SyncContext& context, const EasgdConfig& config) {
  return std::make_unique<Easgd>(context.communicator, config);
}

}  // namespace concord::sync
