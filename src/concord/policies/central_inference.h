#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <torch/types.h>

#include "concord/algos/learner.h"
#include "concord/envs/vector_env.h"
#include "concord/explore/bonus.h"
#include "concord/policies/central_inference_config.h"
#include "concord/policies/policy.h"
#include "concord/policies/policy_context.h"

namespace concord::policies {

// The `central_inference` distribution policy, for either algorithm family: agent threads only
// step their envs, predictor threads run every agent's inference as one batched forward pass
// (runtime::BatchedInference), and the agents' experience goes to the learner as its family takes
// it. That destination is the one part that differs:
//
//   agent a --observations--> predictors: one forward pass on up to prediction_batch rows --> agent a
//   on-policy (GA3C, Babaeizadeh et al., 2017):
//     agent a --segment of T steps--> training queue --> trainer: learner.update() on the
//       concatenated segments under a lock, then publish the parameters to the predictors' copy
//   off-policy (SEED RL's arrangement on threads, Espeholt et al., 2020):
//     agent a --each step--> learner.observe(o, a, r, ..., stream a)   (runtime::feed_replay)
//     the calling thread: learner.update(); publish the parameters to the predictors' own copies
//
// On-policy: predictors never read the learner: they act with a copy (ActorCopy). A segment
// remembers the parameter version of its first action; charts/policy_lag is how far the learner
// moved since. An agent starts a segment only when it holds a slot of the training queue,
// training_batch x (max_policy_lag + 1) in all (runtime::TrainingQueue), so the lag is bounded at
// its source. At max_policy_lag = 0 (the default) collection and learning take turns and every
// segment is on-policy: even a small, corrected lag failed more CartPole runs (bench/RESULTS.md,
// "Policies"). A lag L buys throughput, for an algorithm that corrects it (PPO, A2C with V-trace).
// Agents collect with RolloutCollector, each drawing its actions from its own generator (agent 0
// continuing the process generator's stream), so one agent at lag 0 trains bit for bit as
// `single`; a recurrent network's state travels with each request, and each segment keeps its
// start state. With training_batch = 0 (the default) and no dynamic adjustment, each update is
// the next segment of every agent, in agent order, and depends on the seed and the lag only;
// otherwise trainers batch segments as they arrive. Episodes and exploration bonuses travel with
// the segments; callbacks run under the learner's lock, never during an update. Dynamic
// adjustment (off by default) moves the thread counts (AdjustedThreads).
//
// Off-policy: each predictor acts with a network copy of its own and picks up the learner's
// newest parameters before each batch (they are published after every update), so actions are
// at most the updates of one batch behind. Every agent explores as the algorithm's single actor
// does (actor 0 of 1: DQN's one epsilon schedule), since a batch acts under one context. The
// replay ratio is the algorithm's, pinned from both sides: the learner's u-th update waits until
// the agents have stored (u - 1) x train_frequency steps past learning_starts, and the agents
// wait while they are train_frequency steps ahead of the updates (plus one step of each agent in
// flight). Steps, checkpoints, episodes and errors are feed_replay's, as under `apex`.
//
// Refused at construction, in one line naming the setting: an invalid config, threaded or
// asynchronous envs (each agent steps its share, seeded as `single` seeds them), env.num_envs not
// divisible by agents; on-policy, an uncorrected lag; off-policy, the on-policy layout (trainers,
// training_batch, max_policy_lag, dynamic_adjustment), an exploration bonus, or a learner that
// cannot observe while it updates or copy its acting network. train() stops at total_steps
// (claimed as segments or steps start), at should_stop(), or at the first exception of any
// thread, rethrown naming it after every join.
class CentralInferencePolicy : public Policy {
 public:
  CentralInferencePolicy(const CentralInferenceConfig& config, const envs::VectorEnvConfig& env_config,
                         algos::Learner& learner, torch::Device device, explore::Bonus* bonus = nullptr);
  ~CentralInferencePolicy() override;

  void train(TrainingState& state, int64_t total_steps, int64_t checkpoint_interval_steps,
             const TrainingCallbacks& callbacks) override;

  const CentralInferenceConfig& config() const { return config_; }

  // Where the agents' experience goes and who learns from it (central_inference.cpp).
  class Destination;

 private:
  CentralInferenceConfig config_;
  uint64_t seed_;
  torch::Device device_;
  std::vector<std::unique_ptr<envs::VectorEnv>> envs_;
  std::unique_ptr<Destination> destination_;
};

// The `central_inference` policy of a run, for a learner of either family.
std::unique_ptr<Policy> make_central_inference_policy(const PolicyContext& context,
                                                      const CentralInferenceConfig& config);

}  // namespace concord::policies
