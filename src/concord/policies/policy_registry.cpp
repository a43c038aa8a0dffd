#include "concord/policies/policy_registry.h"

#include <stdexcept>

#include "concord/policies/hogwild.h"
#include "concord/policies/single.h"

namespace concord::policies {
namespace {

std::unique_ptr<Policy> make_single(const PolicyContext& context) {
  if (context.env_config.num_threads != 1) {
    throw std::invalid_argument("policy 'single' steps environments on one thread, but env.num_threads = " +
                                std::to_string(context.env_config.num_threads) +
                                "; use policy 'sync_vector' to step them on several");
  }
  return std::make_unique<SinglePolicy>(std::make_unique<envs::VectorEnv>(context.env_config), context.learner,
                                        context.device);
}

// PAAC's structure is exactly the synchronous loop with a multi-threaded vector engine: one
// batched forward pass for all envs, n_w threads stepping them, one update every T steps.
std::unique_ptr<Policy> make_sync_vector(const PolicyContext& context) {
  return std::make_unique<SinglePolicy>(std::make_unique<envs::VectorEnv>(context.env_config), context.learner,
                                        context.device);
}

std::unique_ptr<Policy> make_hogwild(const PolicyContext& context) {
  return std::make_unique<HogwildPolicy>(context.env_config, context.learner, context.device,
                                         static_cast<int>(context.config.get_int("policy.hogwild.workers")));
}

void declare_nothing(core::ConfigSchema&) {}

void declare_hogwild(core::ConfigSchema& schema) {
  schema.declare("policy.hogwild.workers", int64_t{2}, "Actor-learner threads (env.num_envs is split among them)");
}

struct PolicyEntry {
  const char* name;
  void (*declare)(core::ConfigSchema& schema);
  std::unique_ptr<Policy> (*make)(const PolicyContext& context);
};

// The registry: one line per policy.
const PolicyEntry kPolicies[] = {
    {"single", declare_nothing, make_single},
    {"sync_vector", declare_nothing, make_sync_vector},
    {"hogwild", declare_hogwild, make_hogwild},
};

}  // namespace

void declare_policy_keys(core::ConfigSchema& schema) {
  for (const PolicyEntry& policy : kPolicies) policy.declare(schema);
}

std::vector<std::string> policy_names() {
  std::vector<std::string> names;
  for (const PolicyEntry& policy : kPolicies) names.emplace_back(policy.name);
  return names;
}

std::unique_ptr<Policy> make_policy(const std::string& name, const PolicyContext& context) {
  for (const PolicyEntry& policy : kPolicies) {
    if (name == policy.name) return policy.make(context);
  }
  std::string known;
  for (const std::string& known_name : policy_names()) known += (known.empty() ? "" : ", ") + known_name;
  throw std::invalid_argument("unknown policy '" + name + "' (known: " + known + ")");
}

}  // namespace concord::policies
