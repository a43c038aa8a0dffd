#pragma once

#include <memory>
#include <string>
#include <vector>

#include "concord/core/config.h"
#include "concord/policies/policy.h"
#include "concord/policies/policy_context.h"

namespace concord::policies {

// The distribution policies a run can name (train.policy / --policy), one registry line each in
// policy_registry.cpp naming the policy's factory, with their config keys policy.<name>.<key>
// (the fields of the config struct beside the policy). Adding a policy: docs/extending.md.
//
//   single             one thread steps all envs and updates (the reference)
//   sync_vector        PAAC: the same loop with env.num_threads threads stepping the envs
//   hogwild            A3C: policy.hogwild.actors actor-learner threads, lock-free shared
//                      parameters and optimiser statistics (DQN: asynchronous Q-learning)
//   central_inference  GA3C: agent threads step envs, predictor threads batch their inference,
//                      trainer threads batch finished segments into learner updates
//   multi_learner      one learner per process (rank), each with its own envs; replicas kept
//                      identical by a sync strategy (sync.strategy: bucketed gradient
//                      allreduce by default)
//   actor_processes    MSRL's multi-actor single learner: rank 0 learns, ranks 1..A step envs
//                      and act, experience by c10d send/recv, parameters sent back
//   async_learner      a collector thread acts with parameters exactly
//                      policy.async_learner.max_policy_lag updates old while the calling
//                      thread learns from what it collected (either family)
//   apex               Ape-X (off-policy learners): policy.apex.actors actor threads fill the
//                      learner's replay while the calling thread updates from it; under a
//                      launcher, rank 0 learns and ranks 1..A act (apex_processes.h)
//   seed_rl            SEED RL: ranks 1..A only step envs; rank 0 batches inference for all of
//                      them and learns (either family)
//
// env.num_envs is always the total number of environments of the run.

// Declares every policy's keys. Throws std::logic_error if one is already declared.
void declare_policy_keys(core::ConfigSchema& schema);

// The names make_policy accepts, in registry order.
std::vector<std::string> policy_names();
// Every name with what it is, in registry order, for help texts: "single (...), sync_vector (PAAC), ...".
std::string policy_summaries();
// The policies that run off-policy learners, comma-separated, from the registry.
std::string off_policy_policies();

// The policies that run every algorithm with the model on the calling thread alone ("single or
// sync_vector"), from the registry: what a refusal offers instead.
std::string one_thread_policies();

// The rounds (every env of the run stepping one rollout) one update of the named policy learns
// from, as `config` sets it: 1 but for a policy that batches otherwise (central_inference's
// training_batch). Throws std::invalid_argument for an unknown name.
int64_t rounds_per_update(const std::string& name, const core::Config& config);

// Whether the named policy runs ranks in several processes (and so needs a communicator, a world
// of one when no launcher started the run). Throws std::invalid_argument for an unknown name.
bool policy_spans_processes(const std::string& name);
// Whether it may: those above, and those that run on threads unless a launcher started several
// ranks (apex). Throws std::invalid_argument for an unknown name.
bool policy_may_span_processes(const std::string& name);

// Builds the named policy, checking at once that it can run this algorithm with this config.
// Throws std::invalid_argument for an unknown name ("unknown policy 'x' (known: ...)") or a
// combination that cannot work, with a message naming the setting to change.
std::unique_ptr<Policy> make_policy(const std::string& name, const PolicyContext& context);

}  // namespace concord::policies
