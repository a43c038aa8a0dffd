#include "concord/sync/sync_registry.h"

#include <stdexcept>

#include "concord/sync/easgd.h"
#include "concord/sync/gossip.h"
#include "concord/sync/gradient_allreduce.h"
#include "concord/sync/local_sgd.h"

namespace concord::sync {
namespace {

void declare_nothing(core::ConfigSchema&) {}

std::unique_ptr<SyncStrategy> make_none(const core::Config&, comm::Communicator& communicator) {
  if (communicator.world_size() > 1) {
    throw std::invalid_argument("sync strategy 'none' keeps replicas apart, but there are " +
                                std::to_string(communicator.world_size()) + " ranks; choose allreduce or another");
  }
  return std::make_unique<NoSync>();
}

void declare_allreduce(core::ConfigSchema& schema) {
  schema.declare("sync.allreduce.bucket_kb", int64_t{1024},
                 "Gradient bucket size in KiB: a bucket's allreduce overlaps the backward of the next (0: one bucket)");
}

std::unique_ptr<SyncStrategy> make_allreduce(const core::Config& config, comm::Communicator& communicator) {
  const int64_t bucket_kb = config.get_int("sync.allreduce.bucket_kb");
  if (bucket_kb < 0) throw std::invalid_argument("sync.allreduce.bucket_kb must be >= 0, got " + std::to_string(bucket_kb));
  return std::make_unique<GradientAllreduce>(communicator, bucket_kb * 1024);
}

void declare_local_sgd(core::ConfigSchema& schema) {
  const LocalSgdConfig defaults;
  schema.declare("sync.local_sgd.local_steps", defaults.local_steps, "H: local steps between two parameter averages");
  schema.declare("sync.local_sgd.warmup_steps", defaults.warmup_steps,
                 "Post-local SGD: steps of synchronous gradient averaging before local SGD starts (0: none)");
}

std::unique_ptr<SyncStrategy> make_local_sgd(const core::Config& config, comm::Communicator& communicator) {
  return std::make_unique<LocalSgd>(
      communicator, LocalSgdConfig{config.get_int("sync.local_sgd.local_steps"), config.get_int("sync.local_sgd.warmup_steps")});
}

void declare_easgd(core::ConfigSchema& schema) {
  const EasgdConfig defaults;
  schema.declare("sync.easgd.alpha", defaults.alpha, "Elastic coefficient; synchronous needs workers * alpha <= 1");
  schema.declare("sync.easgd.tau", defaults.tau, "Steps between elastic exchanges with the centre variable");
  schema.declare("sync.easgd.asynchronous", defaults.asynchronous,
                 "The asynchronous rule: workers meet the centre (on rank 0) one at a time");
  schema.declare("sync.easgd.momentum", defaults.momentum, "EAMSGD's Nesterov momentum delta (0: plain EASGD)");
}

std::unique_ptr<SyncStrategy> make_easgd(const core::Config& config, comm::Communicator& communicator) {
  return std::make_unique<Easgd>(communicator,
                                 EasgdConfig{config.get_double("sync.easgd.alpha"), config.get_int("sync.easgd.tau"),
                                             config.get_bool("sync.easgd.asynchronous"),
                                             config.get_double("sync.easgd.momentum")});
}

void declare_gossip(core::ConfigSchema& schema) {
  schema.declare("sync.gossip.probability", GossipConfig{}.probability,
                 "p: chance that a replica pushes its parameters and half its weight to a random peer after a step");
}

std::unique_ptr<SyncStrategy> make_gossip(const core::Config& config, comm::Communicator& communicator) {
  // Every rank derives the same exchange pattern from the run's seed.
  return std::make_unique<Gossip>(communicator, GossipConfig{config.get_double("sync.gossip.probability"),
                                                             static_cast<uint64_t>(config.get_int("run.seed"))});
}

struct StrategyEntry {
  const char* name;
  void (*declare)(core::ConfigSchema& schema);
  std::unique_ptr<SyncStrategy> (*make)(const core::Config& config, comm::Communicator& communicator);
};

// The registry: one line per strategy.
const StrategyEntry kStrategies[] = {
    {"none", declare_nothing, make_none},
    {"allreduce", declare_allreduce, make_allreduce},
    {"local_sgd", declare_local_sgd, make_local_sgd},
    {"easgd", declare_easgd, make_easgd},
    {"gossip", declare_gossip, make_gossip},
};

}  // namespace

void declare_sync_keys(core::ConfigSchema& schema) {
  schema.declare("sync.strategy", std::string("allreduce"),
                 "How replicas on several ranks agree (allreduce, ...; see `concord config`)");
  for (const StrategyEntry& strategy : kStrategies) strategy.declare(schema);
}

std::vector<std::string> sync_strategy_names() {
  std::vector<std::string> names;
  for (const StrategyEntry& strategy : kStrategies) names.emplace_back(strategy.name);
  return names;
}

std::unique_ptr<SyncStrategy> make_sync_strategy(const std::string& name, const core::Config& config,
                                                 comm::Communicator& communicator) {
  for (const StrategyEntry& strategy : kStrategies) {
    if (name == strategy.name) return strategy.make(config, communicator);
  }
  std::string known;
  for (const std::string& known_name : sync_strategy_names()) known += (known.empty() ? "" : ", ") + known_name;
  throw std::invalid_argument("unknown sync strategy '" + name + "' (known: " + known + ")");
}

}  // namespace concord::sync
