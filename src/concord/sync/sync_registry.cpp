#include "concord/sync/sync_registry.h"

#include <functional>

#include "concord/core/config_fields.h"
#include "concord/core/registry.h"
#include "concord/sync/easgd.h"
#include "concord/sync/gossip.h"
#include "concord/sync/gradient_allreduce.h"
#include "concord/sync/local_sgd.h"

namespace concord::sync {
namespace {

// A strategy as the registry sees it: its keys under sync.<name>. and its factory, which reads
// the strategy's config struct from them.
struct StrategyEntry {
  void (*declare)(core::ConfigSchema& schema, const std::string& prefix);  // nullptr: no keys
  std::function<std::unique_ptr<SyncStrategy>(const SyncContext& context, const std::string& prefix)> make;
};

// A strategy without keys.
StrategyEntry strategy(std::unique_ptr<SyncStrategy> (*make)(const SyncContext&)) {
  return {nullptr, [make](const SyncContext& context, const std::string&) { return make(context); }};
}

// A strategy whose keys are the fields of its config struct.
template <typename Config>
StrategyEntry strategy(std::unique_ptr<SyncStrategy> (*make)(const SyncContext&, const Config&)) {
  return {core::declare_config<Config>, [make](const SyncContext& context, const std::string& prefix) {
            return make(context, core::read_config<Config>(context.config, prefix));
          }};
}

// The registry: one line per strategy, naming its factory (in the strategy's own file).
core::Registry<StrategyEntry> make_registry() {
  core::Registry<StrategyEntry> registry("sync strategy");
  registry.add("none", strategy(make_no_sync));
  registry.add("allreduce", strategy(make_gradient_allreduce));
  registry.add("local_sgd", strategy(make_local_sgd));
  registry.add("easgd", strategy(make_easgd));
  registry.add("gossip", strategy(make_gossip));
  return registry;
}

const core::Registry<StrategyEntry>& strategies() {
  static const core::Registry<StrategyEntry> registry = make_registry();
  return registry;
}

std::string prefix_of(const std::string& name) { return "sync." + name + "."; }

}  // namespace

void declare_sync_keys(core::ConfigSchema& schema) {
  schema.declare("sync.strategy", std::string("allreduce"),
                 "How replicas on several ranks agree (allreduce, ...; see `concord config`)");
  for (const auto& [name, entry] : strategies().entries()) {
    if (entry.declare != nullptr) entry.declare(schema, prefix_of(name));
  }
}

std::vector<std::string> sync_strategy_names() { return strategies().names(); }

std::unique_ptr<SyncStrategy> make_sync_strategy(const std::string& name, const core::Config& config,
                                                 comm::Communicator& communicator) {
  return strategies().at(name).make(SyncContext{config, communicator}, prefix_of(name));
}

}  // namespace concord::sync
