#include "concord/sync/local_sgd.h"

#include <stdexcept>

#include <torch/torch.h>

#include "concord/core/checkpoint.h"
#include "concord/core/checkpoint_fields.h"
#include "concord/core/config_problems.h"
#include "concord/sync/payload.h"

namespace concord::sync {

const core::ConfigFields<LocalSgdConfig>& LocalSgdConfig::fields() {
  static const core::ConfigFields<LocalSgdConfig> kFields = {
      {"local_steps", &LocalSgdConfig::local_steps, "H: local steps between two parameter averages"},
      {"warmup_steps", &LocalSgdConfig::warmup_steps,
       "Post-local SGD: steps of synchronous gradient averaging before local SGD starts (0: none)"},
  };
  return kFields;
}

void LocalSgdConfig::validate() const {
  core::ConfigProblems problems;
  problems.check(local_steps >= 1, "local_steps", local_steps, ">= 1");
  problems.check(warmup_steps >= 0, "warmup_steps", warmup_steps, ">= 0");
  problems.throw_if_any("sync.local_sgd config");
}

LocalSgd::LocalSgd(comm::Communicator& communicator, LocalSgdConfig config)
    : communicator_(communicator), config_(core::validated(config)) {}

void LocalSgd::attach(nn::FlatParameters& parameters) {
  parameters_ = &parameters;
  torch::NoGradGuard no_grad;
  communicator_.broadcast(parameters.values(), 0);
  stats_.bytes += payload_bytes(parameters.values());
}

void LocalSgd::synchronize_gradients() {
  if (!in_warmup()) return;
  communicator_.allreduce_mean(parameters_->gradient());
  stats_.bytes += payload_bytes(parameters_->gradient());
  ++stats_.rounds;
}

void LocalSgd::after_step() {
  ++steps_;
  const int64_t local_steps_done = steps_ - config_.warmup_steps;
  if (local_steps_done <= 0 || local_steps_done % config_.local_steps != 0) return;
  torch::NoGradGuard no_grad;
  communicator_.allreduce_mean(parameters_->values());
  stats_.bytes += payload_bytes(parameters_->values());
  ++stats_.rounds;
}

void LocalSgd::save(core::Checkpoint& checkpoint) const {
  save_sync_stats(checkpoint, stats_);
  checkpoint.metadata["sync"]["steps"] = steps_;
}

void LocalSgd::load(const core::Checkpoint& checkpoint) {
  stats_ = load_sync_stats(checkpoint);
  steps_ = core::metadata_int(checkpoint, "sync", "steps");
}

std::unique_ptr<SyncStrategy> make_local_sgd(const SyncContext& context, const LocalSgdConfig& config) {
  return std::make_unique<LocalSgd>(context.communicator, config);
}

}  // namespace concord::sync
