#include "concord/policies/policy_registry.h"

#include <stdexcept>

#include "concord/core/blas.h"
#include "concord/policies/actor_processes.h"
#include "concord/policies/central_inference.h"
#include "concord/policies/hogwild.h"
#include "concord/policies/multi_learner.h"
#include "concord/policies/single.h"
#include "concord/sync/sync_registry.h"

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

// Each rank builds this on its own envs (TrainingRun seeds them per rank); the sync strategy is
// attached last, as its first act is a collective (rank 0's parameters to every replica).
std::unique_ptr<Policy> make_multi_learner(const PolicyContext& context) {
  comm::Communicator& communicator = *context.communicator;
  envs::VectorEnvConfig rank_envs = context.env_config;
  if (rank_envs.num_envs % communicator.world_size() != 0) {
    throw std::invalid_argument("policy 'multi_learner': env.num_envs = " + std::to_string(rank_envs.num_envs) +
                                " must be divisible by its " + std::to_string(communicator.world_size()) + " ranks");
  }
  rank_envs.num_envs /= communicator.world_size();
  auto policy = std::make_unique<MultiLearnerPolicy>(std::make_unique<envs::VectorEnv>(rank_envs),
                                                     context.learner, context.device, communicator,
                                                     context.config.get_int("policy.multi_learner.check_every"),
                                                     context.bonus,
                                                     context.config.get_int("policy.multi_learner.merge_counts_every"));
  context.learner.set_sync_strategy(
      sync::make_sync_strategy(context.config.get_string("sync.strategy"), context.config, communicator));
  return policy;
}

std::unique_ptr<Policy> make_actor_processes(const PolicyContext& context) {
  ActorProcessesConfig policy;
  policy.synchronous = context.config.get_bool("policy.actor_processes.synchronous");
  policy.broadcast_every = context.config.get_int("policy.actor_processes.broadcast_every");
  policy.on_actor_failure = context.config.get_string("policy.actor_processes.on_actor_failure");
  return std::make_unique<ActorProcessesPolicy>(policy, context.env_config, context.learner, context.device,
                                                *context.communicator, context.bonus);
}

void declare_nothing(core::ConfigSchema&) {}

void declare_actor_processes(core::ConfigSchema& schema) {
  const ActorProcessesConfig defaults;
  schema.declare("policy.actor_processes.synchronous", defaults.synchronous,
                 "true: actors wait for each update's parameters; false: they collect the next rollout meanwhile");
  schema.declare("policy.actor_processes.broadcast_every", defaults.broadcast_every,
                 "Updates between parameter broadcasts to the actors");
  schema.declare("policy.actor_processes.on_actor_failure", defaults.on_actor_failure,
                 "continue (drop a dead actor and go on) or abort");
}

void declare_multi_learner(core::ConfigSchema& schema) {
  schema.declare("policy.multi_learner.check_every", int64_t{100},
                 "Every this many updates, check that every rank's parameters equal rank 0's (0: never)");
  schema.declare("policy.multi_learner.merge_counts_every", int64_t{10},
                 "Updates between merges of the ranks' exploration counts (explore.bonus; 0: never, each rank "
                 "counts alone)");
}

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
  bool spans_processes;
  bool runs_models_on_threads;  // several threads call the model (and so BLAS) at once
  void (*declare)(core::ConfigSchema& schema);
  std::unique_ptr<Policy> (*make)(const PolicyContext& context);
};

// The registry: one line per policy.
const PolicyEntry kPolicies[] = {
    {"single", false, false, declare_nothing, make_single},
    {"sync_vector", false, false, declare_nothing, make_sync_vector},
    {"hogwild", false, true, declare_hogwild, make_hogwild},
    {"central_inference", false, true, declare_central_inference, make_central_inference},
    {"multi_learner", true, false, declare_multi_learner, make_multi_learner},
    {"actor_processes", true, false, declare_actor_processes, make_actor_processes},
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

namespace {

const PolicyEntry& find_policy(const std::string& name) {
  for (const PolicyEntry& policy : kPolicies) {
    if (name == policy.name) return policy;
  }
  std::string known;
  for (const std::string& known_name : policy_names()) known += (known.empty() ? "" : ", ") + known_name;
  throw std::invalid_argument("unknown policy '" + name + "' (known: " + known + ")");
}

}  // namespace

bool policy_spans_processes(const std::string& name) { return find_policy(name).spans_processes; }

std::unique_ptr<Policy> make_policy(const std::string& name, const PolicyContext& context) {
  const PolicyEntry& policy = find_policy(name);
  if (policy.spans_processes && context.communicator == nullptr) {
    throw std::logic_error("policy '" + name + "' needs a communicator");
  }
  if (policy.runs_models_on_threads) core::require_thread_safe_blas("policy '" + name + "'");
  return policy.make(context);
}

}  // namespace concord::policies
