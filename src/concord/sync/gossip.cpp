#include "concord/sync/gossip.h"

#include <memory>
#include <stdexcept>

#include <torch/torch.h>

#include "concord/core/checkpoint.h"
#include "concord/core/checkpoint_fields.h"
#include "concord/core/config_problems.h"
#include "concord/sync/payload.h"

namespace concord::sync {
namespace {

constexpr int kGossipTag = 0x60551;

}  // namespace

double gossip_mix(const torch::Tensor& x, double w, const torch::Tensor& x_sent, double w_sent) {
  const double total = w + w_sent;
  x.mul_(w / total).add_(x_sent, w_sent / total);
  return total;
}

const core::ConfigFields<GossipConfig>& GossipConfig::fields() {
  static const core::ConfigFields<GossipConfig> kFields = {
      {"probability", &GossipConfig::probability,
       "p: chance that a replica pushes its parameters and half its weight to a random peer after a step"},
  };
  return kFields;
}

void GossipConfig::validate() const {
  core::ConfigProblems problems;
  problems.check(probability >= 0.0 && probability <= 1.0, "probability", probability, "in [0, 1]");
  problems.throw_if_any("sync.gossip config");
}

Gossip::Gossip(comm::Communicator& communicator, GossipConfig config)
    : communicator_(communicator),
      config_(core::validated(config)),
      rng_(config.seed),
      weight_(1.0 / communicator.world_size()) {}

void Gossip::attach(nn::FlatParameters& parameters) {
  parameters_ = &parameters;
  torch::NoGradGuard no_grad;
  communicator_.broadcast(parameters.values(), 0);
  stats_.bytes += payload_bytes(parameters.values());
}

std::vector<int> Gossip::draw_exchanges() {
  const int world = communicator_.world_size();
  std::vector<int> targets(static_cast<size_t>(world), -1);
  for (int sender = 0; sender < world; ++sender) {
    // Both draws happen for every rank, whatever the outcome, so the generators never diverge.
    const bool pushes = core::uniform(rng_, 0.0, 1.0) < config_.probability;
    const int offset = world > 1 ? 1 + static_cast<int>(core::uniform_index(rng_, world - 1)) : 0;
    if (pushes && world > 1) targets[static_cast<size_t>(sender)] = (sender + offset) % world;
  }
  return targets;
}

void Gossip::after_step() {
  const std::vector<int> targets = draw_exchanges();
  const int rank = communicator_.rank();
  torch::NoGradGuard no_grad;
  const torch::Tensor& x = parameters_->values();

  // The message is (x, w / 2) in one tensor, the weight as its last element.
  torch::Tensor outgoing;
  std::unique_ptr<comm::Request> sending;
  const int target = targets[static_cast<size_t>(rank)];
  if (target >= 0) {
    weight_ /= 2.0;
    outgoing = torch::cat({x.detach().flatten(), torch::full({1}, weight_, x.options().requires_grad(false))});
    sending = communicator_.send_async(outgoing, target, kGossipTag);
    stats_.bytes += payload_bytes(outgoing);
    ++stats_.rounds;
  }
  torch::Tensor incoming;
  for (int sender = 0; sender < communicator_.world_size(); ++sender) {
    if (targets[static_cast<size_t>(sender)] != rank) continue;
    if (!incoming.defined()) incoming = torch::empty({x.numel() + 1}, x.options().requires_grad(false));
    communicator_.recv(incoming, sender, kGossipTag);
    const double sent_weight = incoming[x.numel()].item<double>();
    weight_ = gossip_mix(x, weight_, incoming.narrow(0, 0, x.numel()), sent_weight);
  }
  if (sending) sending->wait();
}

void Gossip::save(core::Checkpoint& checkpoint) const {
  save_sync_stats(checkpoint, stats_);
  checkpoint.metadata["sync"]["weight"] = weight_;
  checkpoint.metadata["sync"]["generator"] = core::rng_state(rng_);
}

void Gossip::load(const core::Checkpoint& checkpoint) {
  const SyncStats stats = load_sync_stats(checkpoint);
  const double weight = core::metadata_double(checkpoint, "sync", "weight");
  core::restore_rng(rng_, core::metadata_string(checkpoint, "sync", "generator"), "sync.generator");
  stats_ = stats;
  weight_ = weight;
}

std::unique_ptr<SyncStrategy> make_gossip(const SyncContext& context, const GossipConfig& config) {
  GossipConfig seeded = config;
  seeded.seed = static_cast<uint64_t>(context.config.get_int("run.seed"));
  return std::make_unique<Gossip>(context.communicator, seeded);
}

}  // namespace concord::sync
