#include "concord/sync/sync_registry.h"

#include <stdexcept>

#include "concord/sync/gradient_allreduce.h"

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

struct StrategyEntry {
  const char* name;
  void (*declare)(core::ConfigSchema& schema);
  std::unique_ptr<SyncStrategy> (*make)(const core::Config& config, comm::Communicator& communicator);
};

// The registry: one line per strategy.
const StrategyEntry kStrategies[] = {
    {"none", declare_nothing, make_none},
    {"allreduce", declare_allreduce, make_allreduce},
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
