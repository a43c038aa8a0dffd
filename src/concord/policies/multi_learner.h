#pragma once

#include <cstdint>
#include <memory>

#include "concord/comm/communicator.h"
#include "concord/core/config_fields.h"
#include "concord/policies/policy_context.h"
#include "concord/policies/single.h"

namespace concord::policies {

// How the `multi_learner` policy keeps its ranks together (keys policy.multi_learner.<field>).
struct MultiLearnerConfig {
  int64_t check_every = 100;        // updates between checks that every rank's parameters equal rank 0's; 0: never
  int64_t merge_counts_every = 10;  // updates between merges of the ranks' exploration counts; 0: never

  // Throws std::invalid_argument listing every bad field with its value.
  void validate() const;
  static const core::ConfigFields<MultiLearnerConfig>& fields();
};

// The `multi_learner` distribution policy: K processes (ranks), each running the synchronous
// loop of SinglePolicy on its own env.num_envs / K envs with its own replica of the learner
// (data parallelism: an update's batch is split across ranks, as DDP splits a global batch). The learner's sync
// strategy (set by the registry from sync.strategy, e.g. bucketed gradient allreduce) keeps the
// replicas' parameters identical; this policy keeps the rest of the ranks in lockstep:
//
//   every rank:  rollout on own envs -> learner.update (sync inside every gradient step)
//                -> every merge_counts_every updates, merge exploration counts
//                -> broadcast rank 0's model buffers (observation statistics, DDP's
//                   broadcast_buffers) -> every check_every updates, if the strategy keeps
//                   replicas identical, compare parameters with rank 0's bit for bit
//                -> agree on stopping (allreduce of the stop flag)
//
// global_step counts all ranks' env steps. Every rank calls the callbacks; the owner lets rank 0
// write metrics and checkpoints. The factory for on-policy learners refuses one whose gradient
// steps per update vary (PPO's target_kl): ranks would issue different numbers of collectives.
class MultiLearnerPolicy : public Policy {
 public:
  // `bonus` (may be null) is this rank's exploration bonus; every `config.merge_counts_every`
  // updates the ranks merge their count increments (Bonus::merge_counts), so all count every
  // state (0: never; each rank counts only its own states, the control for shared counts).
  MultiLearnerPolicy(const MultiLearnerConfig& config, std::unique_ptr<envs::VectorEnv> env, algos::Learner& learner,
                     torch::Device device, comm::Communicator& communicator, explore::Bonus* bonus = nullptr);

  void train(TrainingState& state, int64_t total_steps, int64_t checkpoint_interval_steps,
             const TrainingCallbacks& callbacks) override;

 private:
  // Throws std::runtime_error if this rank's parameters differ from rank 0's.
  void check_replicas_identical(const TrainingState& state);

  algos::Learner& learner_;
  comm::Communicator& communicator_;
  MultiLearnerConfig config_;
  explore::Bonus* bonus_;
  SinglePolicy loop_;
};

// Each rank builds this on its own share of the envs (TrainingRun seeds them per rank) and
// attaches the sync strategy named by sync.strategy to the learner.
// The same for an on-policy learner, which must take a fixed number of gradient steps per update.
std::unique_ptr<Policy> make_multi_learner_on_policy(const PolicyContext& context, const MultiLearnerConfig& config);
std::unique_ptr<Policy> make_multi_learner_policy(const PolicyContext& context, const MultiLearnerConfig& config);

}  // namespace concord::policies
