#include "concord/policies/policy_registry.h"

#include <type_traits>
#include <utility>

#include <functional>
#include <stdexcept>

#include "concord/algos/learner.h"
#include "concord/core/blas.h"
#include "concord/core/config_fields.h"
#include "concord/core/registry.h"
#include "concord/envs/registry.h"
#include "concord/policies/actor_processes.h"
#include "concord/policies/apex.h"
#include "concord/policies/async_learner.h"
#include "concord/policies/central_inference.h"
#include "concord/policies/hogwild.h"
#include "concord/policies/multi_learner.h"
#include "concord/policies/runtime/exploration_bonus.h"
#include "concord/policies/seed_rl.h"
#include "concord/policies/single.h"
#include "concord/policies/sync_vector.h"

namespace concord::policies {
namespace {

// Where a policy runs its models, which decides what it needs before it is built.
enum class Placement {
  kOneThread,  // one thread calls the model at a time
  kThreads,    // several threads call the model (and so BLAS) at once: a thread-safe BLAS
  kProcesses,  // ranks in several processes: a communicator
  // Threads of one process, or (under a launcher) ranks in several processes: a thread-safe BLAS
  // when on threads, a communicator when launched.
  kThreadsOrProcesses,
};

// Whether a policy carries an actor's memory (algos/actor.h: the state act() returns, per env)
// from one step to the next where it acts, and to the learner with the experience.
enum class Memory {
  kCarried,          // it acts through runtime::Collector and hands rollouts on whole
  kOnPolicyCarried,  // the same for on-policy learners; its off-policy arrangement carries none
  kNone,             // it acts or moves experience another way (a batched service, a wire format)
};

// A policy whose updates learn from more than one round says so in its config struct.
template <typename Config, typename = void>
struct HasRoundsPerUpdate : std::false_type {};
template <typename Config>
struct HasRoundsPerUpdate<Config, std::void_t<decltype(std::declval<const Config&>().rounds_per_update())>>
    : std::true_type {};

using Factory = std::function<std::unique_ptr<Policy>(const PolicyContext& context, const std::string& prefix)>;

// A policy as the registry sees it: its keys under policy.<name>. and one factory per algorithm
// family it drives (algos::Family), which reads the policy's config struct from them. The
// registry calls the factory of the learner's family, so that a policy never asks which family
// its learner is: one class for both (single), or one per family.
struct PolicyEntry {
  Placement placement;
  Memory memory;
  std::string summary;  // what `concord train --help` says beside the name ("" for none)
  void (*declare)(core::ConfigSchema& schema, const std::string& prefix) = nullptr;  // nullptr: no keys
  Factory make_on_policy;   // empty: the policy drives no on-policy learner
  Factory make_off_policy;  // empty: the policy drives no off-policy learner
  // The rounds (every env one rollout) one update learns from; 1 unless the config struct says.
  std::function<int64_t(const core::Config& config, const std::string& prefix)> rounds_per_update =
      [](const core::Config&, const std::string&) { return int64_t{1}; };

  bool drives(algos::Family family) const {
    return family == algos::Family::kOnPolicy ? static_cast<bool>(make_on_policy) : static_cast<bool>(make_off_policy);
  }
  const Factory& factory(algos::Family family) const {
    return family == algos::Family::kOnPolicy ? make_on_policy : make_off_policy;
  }

  // The policy's factory for on-policy learners: without keys, or reading its config struct.
  PolicyEntry& on_policy(std::unique_ptr<Policy> (*make)(const PolicyContext&)) {
    make_on_policy = keyless(make);
    return *this;
  }
  template <typename Config>
  PolicyEntry& on_policy(std::unique_ptr<Policy> (*make)(const PolicyContext&, const Config&)) {
    make_on_policy = reading(make);
    return *this;
  }
  // The same for off-policy learners.
  PolicyEntry& off_policy(std::unique_ptr<Policy> (*make)(const PolicyContext&)) {
    make_off_policy = keyless(make);
    return *this;
  }
  template <typename Config>
  PolicyEntry& off_policy(std::unique_ptr<Policy> (*make)(const PolicyContext&, const Config&)) {
    make_off_policy = reading(make);
    return *this;
  }
  // One factory for both families.
  template <typename Make>
  PolicyEntry& both(Make make) {
    return on_policy(make).off_policy(make);
  }

 private:
  static Factory keyless(std::unique_ptr<Policy> (*make)(const PolicyContext&)) {
    return [make](const PolicyContext& context, const std::string&) { return make(context); };
  }
  template <typename Config>
  Factory reading(std::unique_ptr<Policy> (*make)(const PolicyContext&, const Config&)) {
    declare = core::declare_config<Config>;
    if constexpr (HasRoundsPerUpdate<Config>::value) {
      rounds_per_update = [](const core::Config& config, const std::string& prefix) {
        return core::read_config<Config>(config, prefix).rounds_per_update();
      };
    }
    return [make](const PolicyContext& context, const std::string& prefix) {
      return make(context, core::read_config<Config>(context.config, prefix));
    };
  }
};

PolicyEntry policy(Placement placement, Memory memory, std::string summary) {
  return PolicyEntry{placement, memory, std::move(summary)};
}

// The registry: one line per policy, naming its factory per family (in the policy's own files).
core::Registry<PolicyEntry> make_registry() {
  core::Registry<PolicyEntry> registry("policy");
  registry.add("single",
               policy(Placement::kOneThread, Memory::kCarried, "the reference: one thread").both(make_single_policy));
  registry.add("sync_vector", policy(Placement::kOneThread, Memory::kCarried, "PAAC").both(make_sync_vector_policy));
  registry.add("hogwild", policy(Placement::kThreads, Memory::kOnPolicyCarried, "A3C").both(make_hogwild_policy));
  registry.add("central_inference",
               policy(Placement::kThreads, Memory::kOnPolicyCarried, "GA3C; SEED RL on threads for off-policy learners")
                   .both(make_central_inference_policy));
  registry.add("async_learner",
               policy(Placement::kThreads, Memory::kCarried, "collect while learning").both(make_async_learner_policy));
  registry.add("multi_learner", policy(Placement::kProcesses, Memory::kCarried, "one learner per process")
                                    .on_policy(make_multi_learner_on_policy)
                                    .off_policy(make_multi_learner_policy));
  registry.add("actor_processes", policy(Placement::kProcesses, Memory::kCarried, "actor processes, one learner")
                                      .on_policy(make_actor_processes_policy));
  registry.add("apex", policy(Placement::kThreadsOrProcesses, Memory::kCarried, "Ape-X").off_policy(make_apex_policy));
  registry.add("seed_rl",
               policy(Placement::kProcesses, Memory::kCarried, "SEED RL: env ranks, one acting and learning rank")
                   .both(make_seed_rl_policy));
  return registry;
}

const core::Registry<PolicyEntry>& policies() {
  static const core::Registry<PolicyEntry> registry = make_registry();
  return registry;
}

std::string prefix_of(const std::string& name) { return "policy." + name + "."; }

// An env that calls an interpreter (EnvSpec::calls_interpreter) runs only under the policies whose
// model runs on one thread: the others would step it beside concurrent model work, serialised on
// the interpreter's lock, or in processes that do not have it.
void refuse_interpreter_env(const std::string& name, const envs::VectorEnvConfig& env_config) {
  if (!envs::make_env(env_config.env_id, env_config.options)->spec().calls_interpreter) return;
  throw std::invalid_argument("policy '" + name + "' cannot train " + env_config.env_id +
                              ", an environment that calls Python (it steps envs from concurrent threads or other "
                              "processes); use train.policy " +
                              one_thread_policies());
}

// The policies that drive learners of `family`, for a refusal.
std::string policies_running(algos::Family family) {
  std::string able;
  for (const auto& [other, candidate] : policies().entries()) {
    if (candidate.drives(family)) able += (able.empty() ? "" : ", ") + other;
  }
  return able;
}

// Policies that move Rollouts, share parameters lock-free or lag them behind the learner drive
// only on-policy learners; policies that fill a replay drive only off-policy ones. A learner of
// a family the policy has no factory for is refused here, in one line.
void refuse_learner_family(const std::string& name, const PolicyEntry& entry, const algos::Learner& learner) {
  if (entry.drives(learner.family())) return;
  if (learner.family() == algos::Family::kOffPolicy) {
    throw std::invalid_argument("policy '" + name +
                                "' runs on-policy algorithms only, and this algorithm learns off-policy from "
                                "replay; use train.policy " +
                                policies_running(algos::Family::kOffPolicy));
  }
  throw std::invalid_argument("policy '" + name +
                              "' runs off-policy algorithms only (it learns from replay), and this algorithm "
                              "learns on-policy from rollouts; use train.policy " +
                              policies_running(algos::Family::kOnPolicy));
}

bool carries_memory(const PolicyEntry& entry, algos::Family family) {
  return entry.memory == Memory::kCarried ||
         (entry.memory == Memory::kOnPolicyCarried && family == algos::Family::kOnPolicy);
}

// The policies that drive a learner of this family and carry its memory, for a refusal.
std::string policies_with_memory(algos::Family family) {
  std::string able;
  for (const auto& [other, candidate] : policies().entries()) {
    if (candidate.drives(family) && carries_memory(candidate, family)) able += (able.empty() ? "" : ", ") + other;
  }
  return able;
}

// A network with memory runs only under a policy that hands each env's state back to the actor.
void refuse_memory(const std::string& name, const PolicyEntry& entry, const algos::Learner& learner) {
  if (carries_memory(entry, learner.family()) || !learner.acts_with_memory()) return;
  throw std::invalid_argument("policy '" + name +
                              "' does not carry a recurrent network's state (algo.recurrent) between its acting "
                              "and its learner; use train.policy " +
                              policies_with_memory(learner.family()));
}

}  // namespace

void declare_policy_keys(core::ConfigSchema& schema) {
  for (const auto& [name, entry] : policies().entries()) {
    if (entry.declare != nullptr) entry.declare(schema, prefix_of(name));
  }
}

std::vector<std::string> policy_names() { return policies().names(); }

std::string policy_summaries() {
  std::string text;
  for (const auto& [name, entry] : policies().entries()) {
    text += (text.empty() ? "" : ", ") + name + (entry.summary.empty() ? "" : " (" + entry.summary + ")");
  }
  return text;
}

std::string off_policy_policies() { return policies_running(algos::Family::kOffPolicy); }

std::string one_thread_policies() {
  std::string able;
  for (const auto& [name, entry] : policies().entries()) {
    if (entry.placement == Placement::kOneThread) able += (able.empty() ? "" : " or ") + name;
  }
  return able;
}

int64_t rounds_per_update(const std::string& name, const core::Config& config) {
  return policies().at(name).rounds_per_update(config, prefix_of(name));
}

bool policy_spans_processes(const std::string& name) { return policies().at(name).placement == Placement::kProcesses; }

bool policy_may_span_processes(const std::string& name) {
  const Placement placement = policies().at(name).placement;
  return placement == Placement::kProcesses || placement == Placement::kThreadsOrProcesses;
}

std::unique_ptr<Policy> make_policy(const std::string& name, const PolicyContext& context) {
  const PolicyEntry& entry = policies().at(name);
  // The environment first: it is refused under every policy not on one thread, whatever the
  // algorithm, so the line names the setting that matters whichever algorithm is chosen.
  if (entry.placement != Placement::kOneThread) refuse_interpreter_env(name, context.env_config);
  refuse_learner_family(name, entry, context.learner);
  refuse_memory(name, entry, context.learner);
  runtime::refuse_bonus_off_policy(context.bonus, context.learner);
  if (entry.placement == Placement::kProcesses && context.communicator == nullptr) {
    throw std::logic_error("policy '" + name + "' needs a communicator");
  }
  const bool on_threads = entry.placement == Placement::kThreads ||
                          (entry.placement == Placement::kThreadsOrProcesses &&
                           (context.communicator == nullptr || context.communicator->world_size() == 1));
  if (on_threads) core::require_thread_safe_blas("policy '" + name + "'");
  try {
    return entry.factory(context.learner.family())(context, prefix_of(name));
  } catch (const NeedsOneThreadPolicy& refusal) {
    throw std::invalid_argument(std::string(refusal.what()) + "; use train.policy " + one_thread_policies());
  }
}

}  // namespace concord::policies
