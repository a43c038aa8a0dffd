#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <torch/types.h>

#include "concord/envs/vector_env.h"
#include "concord/explore/bonus.h"
#include "concord/policies/central_inference_config.h"
#include "concord/policies/policy.h"
#include "concord/policies/policy_context.h"

namespace concord::policies {

// The `central_inference` distribution policy (GA3C, Babaeizadeh et al., 2017) for on-policy
// learners: agents only step environments, predictors run every agent's inference as one batched
// forward pass, and trainers feed batches of finished segments to the learner. (With an off-policy
// learner the factory builds CentralInferenceReplayPolicy: central_inference_replay.h.)
//
//   agent a (own envs) --observations--> prediction queue --> predictor: one act() on up to
//     ^                                                         prediction_batch rows, with the
//     +-------------- actions, log-probs, values <--------------+ actor copy of the parameters
//   agent a --segment of T steps--> training queue --> trainer: concatenate training_batch
//     segments along B, learner.update() under a mutex, publish parameters to the actor copy
//
// The learner is never read by inference: predictors act with a separate ActorCritic whose flat
// parameters a trainer overwrites with one copy_ after each update, under a shared_mutex that
// predictors hold (shared) during their forward pass, so no forward reads a half-written copy.
// Each segment remembers the parameter version its first action was chosen with; the difference
// to the version it is trained against is the policy lag (charts/policy_lag). A2C can correct it
// with V-trace (algo.a2c.vtrace); PPO's clipping tolerates it.
//
// The lag is bounded at its source. The learner is usually the slowest stage, so experience that
// agents collect ahead of it only waits in a queue and grows older. An agent therefore starts a
// segment only when it holds one of training_batch x (max_policy_lag + 1) slots, which a trainer
// frees once it has trained the segment, and asks for the segment's first action only then, with
// the newest parameters. With max_policy_lag = 0 (the default) collection and learning take turns
// and every segment is on-policy (lag exactly 0); with L, about L updates' worth of segments are
// collected while the learner trains, which only an algorithm that corrects the lag may take (PPO,
// A2C with V-trace; the others are refused in one line). Unbounded, a full training queue let the
// lag grow to many updates and CartPole runs failed; even a small, corrected lag failed more runs
// than lag 0 (bench/RESULTS.md, "Policies"), hence the default. A lag buys throughput, since
// agents then keep collecting while the learner trains (bench/RESULTS.md, "Policies").
//
// A segment holds exactly the Rollout layout of the `single` policy for num_envs / agents envs,
// taken as RolloutCollector takes it: an act() request per step, the final observations of
// truncated episodes stored for the learner to evaluate, and a values-only request for
// bootstrap_value (o_T).
// Each agent's actions are drawn from the agent's own generator (the predictor samples every
// request of a batched forward pass apart), so what an agent draws does not depend on which other
// requests shared its batch. Agent 0's generator continues from where the process generator stood
// when train() began, as `single` does on the main thread, so one agent at max_policy_lag = 0
// trains bit for bit as `single`.
//
// With training_batch = 0 (the default) and no dynamic adjustment, every update is the next
// segment of each agent, in agent order, and each agent holds its own max_policy_lag + 1 slots:
// no agent that runs ahead takes another's place in an update, so an update's contents depend on
// the seed and the lag, not on the scheduler (at lag 0, on nothing else). Otherwise the agents
// share one pool of slots and a trainer batches segments in the order they arrive.
//
// Episode returns travel with the segments, so every callback is called by a trainer or by the
// thread that called train(), one at a time, under the lock that serialises learner updates:
// never concurrently with an update.
//
// Dynamic adjustment (off by default): every adjust_interval_seconds the numbers of active
// agents, predictors and trainers each move by a random -1, 0 or +1 within [1, configured], and
// the move is kept only if trainings per second rose. Threads are all created up front and park
// while inactive (see core/active_threads.h).
//
// Requirements, checked at construction (std::invalid_argument naming the setting): a valid
// config (including enough slots that every trainer can fill a batch: training_batch x
// (max_policy_lag + 1) > trainers x (training_batch - 1); per-agent updates need no such rule,
// since one trainer at a time gathers a round), env.batch_size = 0, env.num_threads = 1 (each agent steps
// its own envs) and env.num_envs divisible by agents. Agent a steps the run's envs [a x k, (a + 1) x k),
// k = num_envs / agents, seeded as `single` seeds them (VectorEnvConfig::first_env). train() stops at total_steps
// (counted when segments are claimed, as in `hogwild`), at should_stop(), or at the first exception of any thread,
// which it rethrows after closing every queue and joining every thread.
//
// With an exploration `bonus`, each agent adds it to its segment before queueing it
// (exploration_bonus.h): the counts are updated where experience is collected, and all agents
// count into the bonus's one table.
class CentralInferencePolicy : public Policy {
 public:
  CentralInferencePolicy(const CentralInferenceConfig& config, const envs::VectorEnvConfig& env_config,
                         algos::OnPolicyLearner& learner, torch::Device device, explore::Bonus* bonus = nullptr);

  void train(TrainingState& state, int64_t total_steps, int64_t checkpoint_interval_steps,
             const TrainingCallbacks& callbacks) override;

  const CentralInferenceConfig& config() const { return config_; }

 private:
  CentralInferenceConfig config_;
  uint64_t seed_;
  algos::OnPolicyLearner& learner_;
  torch::Device device_;
  explore::Bonus* bonus_;  // may be null; shared by every agent
  std::vector<std::unique_ptr<envs::VectorEnv>> envs_;
};

std::unique_ptr<Policy> make_central_inference_policy(const PolicyContext& context,
                                                      const CentralInferenceConfig& config);

}  // namespace concord::policies
