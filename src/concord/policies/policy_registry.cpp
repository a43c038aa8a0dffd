#include "concord/policies/policy_registry.h"

#include <stdexcept>

#include "concord/policies/central_inference.h"
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
                                        context.device, context.bonus);
}

// PAAC's structure is exactly the synchronous loop with a multi-threaded vector engine: one
// batched forward pass for all envs, n_w threads stepping them, one update every T steps.
std::unique_ptr<Policy> make_sync_vector(const PolicyContext& context) {
  return std::make_unique<SinglePolicy>(std::make_unique<envs::VectorEnv>(context.env_config), context.learner,
                                        context.device, context.bonus);
}

std::unique_ptr<Policy> make_hogwild(const PolicyContext& context) {
  return std::make_unique<HogwildPolicy>(context.env_config, context.learner, context.device,
                                         static_cast<int>(context.config.get_int("policy.hogwild.workers")),
                                         context.bonus);
}

std::unique_ptr<Policy> make_central_inference(const PolicyContext& context) {
  const core::Config& config = context.config;
  const auto get_int = [&](const char* key) {
    return static_cast<int>(config.get_int(std::string("policy.central_inference.") + key));
  };
  CentralInferenceConfig policy;
  policy.agents = get_int("agents");
  policy.predictors = get_int("predictors");
  policy.trainers = get_int("trainers");
  policy.prediction_batch = get_int("prediction_batch");
  policy.training_batch = get_int("training_batch");
  policy.queue_capacity = get_int("queue_capacity");
  policy.wait_timeout_seconds = config.get_double("policy.central_inference.wait_timeout_seconds");
  policy.dynamic_adjustment = config.get_bool("policy.central_inference.dynamic_adjustment");
  policy.adjust_interval_seconds = config.get_double("policy.central_inference.adjust_interval_seconds");
  return std::make_unique<CentralInferencePolicy>(policy, context.env_config, context.learner, context.device,
                                                  context.bonus);
}

void declare_nothing(core::ConfigSchema&) {}

void declare_hogwild(core::ConfigSchema& schema) {
  schema.declare("policy.hogwild.workers", int64_t{2}, "Actor-learner threads (env.num_envs is split among them)");
}

void declare_central_inference(core::ConfigSchema& schema) {
  const CentralInferenceConfig defaults;
  const std::string prefix = "policy.central_inference.";
  schema.declare(prefix + "agents", int64_t{defaults.agents},
                 "Agent threads, each stepping its own envs (env.num_envs is split among them)");
  schema.declare(prefix + "predictors", int64_t{defaults.predictors}, "Predictor threads running batched inference");
  schema.declare(prefix + "trainers", int64_t{defaults.trainers}, "Trainer threads feeding the learner");
  schema.declare(prefix + "prediction_batch", int64_t{defaults.prediction_batch},
                 "Most observations in one batched forward pass");
  schema.declare(prefix + "training_batch", int64_t{defaults.training_batch},
                 "Agent segments (T steps of num_envs / agents envs) per learner update");
  schema.declare(prefix + "queue_capacity", int64_t{defaults.queue_capacity},
                 "Capacity of the prediction and the training queue");
  schema.declare(prefix + "wait_timeout_seconds", defaults.wait_timeout_seconds,
                 "A blocking wait longer than this while the run is live is an error naming the queue");
  schema.declare(prefix + "dynamic_adjustment", defaults.dynamic_adjustment,
                 "GA3C's random walk over the numbers of agents, predictors and trainers, kept when TPS rises");
  schema.declare(prefix + "adjust_interval_seconds", defaults.adjust_interval_seconds,
                 "How long each thread configuration is measured by the dynamic adjustment");
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
    {"central_inference", declare_central_inference, make_central_inference},
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
