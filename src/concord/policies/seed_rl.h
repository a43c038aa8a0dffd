#pragma once

#include <cstdint>

#include <torch/types.h>

#include "concord/comm/communicator.h"
#include "concord/envs/vector_env.h"
#include "concord/explore/bonus.h"
#include "concord/policies/policy.h"
#include "concord/policies/policy_context.h"

namespace concord::policies {

// The `seed_rl` distribution policy (SEED RL, Espeholt et al., 2020) under a launcher: the actor
// ranks 1..A only step environments, each its share of env.num_envs; rank 0 runs all inference,
// batched over every rank's envs in one forward pass, and learns. Per env step rank 0 sends each
// actor rank its actions and receives its observations, rewards and ends (runtime::RemoteEnvs);
// no network, rollout or replay leaves rank 0.
//
//   actor rank r (envs [(r - 1) k, r k)):       rank 0: `single`'s loop over all A x k envs
//     loop: take actions, step, send results      a = learner's Actor (one batch); envs.step(a)
//                                                  on-policy: update every T steps;
//                                                  off-policy: observe, update every train_frequency
//
// Rank 0's loop is `single`'s, unchanged, for either algorithm family; the actor ranks seed their
// envs from rank 0's seed (broadcast when train() starts) with their shares' offsets, so a run
// trains exactly as `single` with the same seed and env.num_envs. What it buys is where the work
// runs: envs on other processes or machines, inference and learning on the learner's device, and
// no parameters ever sent. Each actor rank steps its share with env.num_threads threads.
//
// Every wait is bounded by comm.timeout_seconds: an actor rank waits that long for rank 0's next
// command (so an update or checkpoint must take less), and rank 0 as long for an actor's results;
// a failed or stalled actor rank fails the run naming it. When rank 0's train() ends, normally or
// by an error of its own, it tells the actor ranks to stop, and their train() returns.
//
// Refused at construction, in one line: fewer than 2 ranks, NCCL (whose messages carry no tags),
// env.num_envs not divisible by the actor ranks, and env.batch_size != 0.
class SeedRlPolicy : public Policy {
 public:
  explicit SeedRlPolicy(const PolicyContext& context);

  void train(TrainingState& state, int64_t total_steps, int64_t checkpoint_interval_steps,
             const TrainingCallbacks& callbacks) override;

 private:
  comm::Communicator& communicator_;
  envs::VectorEnvConfig env_config_;
  envs::EnvSpec spec_;
  algos::Learner& learner_;
  torch::Device device_;
  explore::Bonus* bonus_;
};

std::unique_ptr<Policy> make_seed_rl_policy(const PolicyContext& context);

}  // namespace concord::policies
