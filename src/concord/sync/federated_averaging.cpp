#include "concord/sync/federated_averaging.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

#include <torch/torch.h>

#include "concord/core/checkpoint.h"
#include "concord/core/checkpoint_fields.h"
#include "concord/core/config_problems.h"
#include "concord/sync/payload.h"

namespace concord::sync {

void FederatedAveragingConfig::validate() const {
  core::ConfigProblems problems;
  problems.check(clients >= 1, "clients", clients, ">= 1");
  problems.check(fraction > 0.0 && fraction <= 1.0, "fraction", fraction, "in (0, 1]");
  problems.throw_if_any("federated averaging config");
}

FederatedAveraging::FederatedAveraging(comm::Communicator& communicator, FederatedAveragingConfig config)
    : communicator_(communicator), config_(core::validated(config)), rng_(config.seed) {
  clients_per_round_ = std::max(1, static_cast<int>(std::lround(config_.fraction * config_.clients)));
}

std::vector<int> FederatedAveraging::select_clients() {
  // A partial Fisher-Yates shuffle: the first clients_per_round_ entries are a uniform sample.
  std::vector<int> clients(static_cast<size_t>(config_.clients));
  std::iota(clients.begin(), clients.end(), 0);
  for (int i = 0; i < clients_per_round_; ++i) {
    const auto j = static_cast<size_t>(i + core::uniform_index(rng_, config_.clients - i));
    std::swap(clients[static_cast<size_t>(i)], clients[j]);
  }
  clients.resize(static_cast<size_t>(clients_per_round_));
  std::sort(clients.begin(), clients.end());
  return clients;
}

void FederatedAveraging::average(const torch::Tensor& weighted_sum, double weight) {
  torch::NoGradGuard no_grad;
  // The weight travels as the last element, so a round is one allreduce.
  torch::Tensor message = torch::cat({weighted_sum.flatten(), torch::full({1}, weight, weighted_sum.options())});
  communicator_.allreduce(message, comm::ReduceOp::kSum);
  stats_.bytes += payload_bytes(message);
  ++stats_.rounds;
  const double total_weight = message[weighted_sum.numel()].item<double>();
  if (!(total_weight > 0.0)) throw std::runtime_error("fedavg: no client contributed to this round's average");
  weighted_sum.copy_(message.narrow(0, 0, weighted_sum.numel()).view_as(weighted_sum).div_(total_weight));
}

void FederatedAveraging::save(core::Checkpoint& checkpoint) const {
  save_sync_stats(checkpoint, stats_);
  checkpoint.metadata["sync"]["generator"] = core::rng_state(rng_);
}

void FederatedAveraging::load(const core::Checkpoint& checkpoint) {
  const SyncStats stats = load_sync_stats(checkpoint);
  core::restore_rng(rng_, core::metadata_string(checkpoint, "sync", "generator"), "sync.generator");
  stats_ = stats;
}

}  // namespace concord::sync
