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
// learners: agent threads only step their envs, predictor threads run every agent's inference as
// one batched forward pass, and trainer threads feed batches of finished segments to the learner.
// (With an off-policy learner the factory builds CentralInferenceReplayPolicy instead.)
//
//   agent a --observations--> predictors: one act() on up to prediction_batch rows --> agent a
//   agent a --segment of T steps--> training queue --> trainer: learner.update() on the
//     concatenated segments under a lock, then publish the parameters to the predictors' copy
//
// Predictors never read the learner: they act with a copy (ActorCopy). A segment remembers the
// parameter version of its first action; charts/policy_lag is how far the learner moved since.
// An agent starts a segment only when it holds a slot of the training queue, training_batch x
// (max_policy_lag + 1) in all (runtime::TrainingQueue), so the lag is bounded at its source. At
// max_policy_lag = 0 (the default) collection and learning take turns and every segment is
// on-policy: even a small, corrected lag failed more CartPole runs (bench/RESULTS.md,
// "Policies"). A lag L buys throughput, for an algorithm that corrects it (PPO, A2C with V-trace).
//
// Agents collect with RolloutCollector, each drawing its actions from its own generator (agent 0
// continuing the process generator's stream), so one agent at lag 0 trains bit for bit as
// `single`. With training_batch = 0 (the default) and no dynamic adjustment, each update is the
// next segment of every agent, in agent order, and depends on the seed and the lag only;
// otherwise trainers batch segments as they arrive. Episodes and exploration bonuses travel with
// the segments; callbacks run under the learner's lock, never during an update. Dynamic
// adjustment (off by default) moves the thread counts (AdjustedThreads).
//
// Refused at construction, in one line naming the setting: an invalid config, threaded or
// asynchronous envs (each agent steps its share, seeded as `single` seeds them), env.num_envs not
// divisible by agents, an uncorrected lag. train() stops at total_steps (claimed as segments
// start), at should_stop(), or at the first exception of any thread, rethrown after every join.
class CentralInferencePolicy : public Policy {
 public:
  CentralInferencePolicy(const CentralInferenceConfig& config, const envs::VectorEnvConfig& env_config,
                         algos::OnPolicyLearner& learner, torch::Device device, explore::Bonus* bonus = nullptr);

  void train(TrainingState& state, int64_t total_steps, int64_t checkpoint_interval_steps,
             const TrainingCallbacks& callbacks) override;

  const CentralInferenceConfig& config() const { return config_; }

 private:
  friend class CentralInferenceRun;
  CentralInferenceConfig config_;
  uint64_t seed_;
  algos::OnPolicyLearner& learner_;
  torch::Device device_;
  explore::Bonus* bonus_;  // may be null; shared by every agent
  std::vector<std::unique_ptr<envs::VectorEnv>> envs_;
};

// The `central_inference` policy of a run with an on-policy learner (an off-policy one:
// central_inference_replay.h).
std::unique_ptr<Policy> make_central_inference_policy(const PolicyContext& context,
                                                      const CentralInferenceConfig& config);

}  // namespace concord::policies
