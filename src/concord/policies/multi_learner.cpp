#include "concord/policies/multi_learner.h"

#include <stdexcept>

#include <torch/torch.h>

namespace concord::policies {

MultiLearnerPolicy::MultiLearnerPolicy(std::unique_ptr<envs::VectorEnv> env, algos::Learner& learner,
                                       torch::Device device, comm::Communicator& communicator, int64_t check_every,
                                       explore::Bonus* bonus, int64_t merge_counts_every)
    : learner_(learner),
      communicator_(communicator),
      check_every_(check_every),
      bonus_(bonus),
      merge_counts_every_(merge_counts_every),
      loop_(std::move(env), learner, device, bonus, communicator.world_size()) {
  if (learner.gradient_steps_per_update() == 0) {
    throw std::invalid_argument(
        "policy 'multi_learner' needs every rank to take the same number of gradient steps per update, but the "
        "algorithm stops early on its own data (set algo.ppo.target_kl = 0)");
  }
  if (merge_counts_every < 0) {
    throw std::invalid_argument("policy.multi_learner.merge_counts_every must be >= 0, got " +
                                std::to_string(merge_counts_every));
  }
  if (check_every < 0) {
    throw std::invalid_argument("policy.multi_learner.check_every must be >= 0, got " + std::to_string(check_every));
  }
}

void MultiLearnerPolicy::check_replicas_identical(const TrainingState& state) {
  torch::NoGradGuard no_grad;
  const torch::Tensor mine = learner_.flat_parameters().values().detach();
  torch::Tensor rank0 = mine.clone();
  communicator_.broadcast(rank0, 0);
  if (!torch::equal(mine, rank0)) {
    throw std::runtime_error("multi_learner: rank " + std::to_string(communicator_.rank()) +
                             "'s parameters differ from rank 0's after update " + std::to_string(state.updates) +
                             " (max abs difference " + std::to_string((mine - rank0).abs().max().item<double>()) +
                             "): the replicas diverged");
  }
}

void MultiLearnerPolicy::train(TrainingState& state, int64_t total_steps, int64_t checkpoint_interval_steps,
                               const TrainingCallbacks& callbacks) {
  TrainingCallbacks lockstep = callbacks;
  // A stop on any rank (a signal reaches ranks at different moments) stops every rank at the
  // same update, so none is left waiting in a collective.
  lockstep.should_stop = [&] {
    const bool mine = callbacks.should_stop && callbacks.should_stop();
    torch::Tensor stop = torch::tensor({mine ? 1 : 0}, torch::kInt32);
    communicator_.allreduce(stop, comm::ReduceOp::kMax);
    return stop.item<int>() != 0;
  };
  lockstep.on_update = [&](const TrainingState& now, const algos::Metrics& metrics, const core::EpisodeStats& episodes) {
    {
      torch::NoGradGuard no_grad;
      for (auto& buffer : learner_.model()->named_buffers()) communicator_.broadcast(buffer.value(), 0);
    }
    if (bonus_ != nullptr && merge_counts_every_ > 0 && now.updates % merge_counts_every_ == 0) {
      bonus_->merge_counts(communicator_);
    }
    if (check_every_ > 0 && now.updates % check_every_ == 0 && learner_.sync_strategy().keeps_replicas_identical()) {
      check_replicas_identical(now);
    }
    algos::Metrics with_sync = metrics;
    const sync::SyncStats sync_stats = learner_.sync_strategy().stats();
    with_sync["sync/bytes"] = static_cast<double>(sync_stats.bytes);
    with_sync["sync/rounds"] = static_cast<double>(sync_stats.rounds);
    with_sync["sync/ranks"] = communicator_.world_size();
    if (callbacks.on_update) callbacks.on_update(now, with_sync, episodes);
  };
  loop_.train(state, total_steps, checkpoint_interval_steps, lockstep);
}

}  // namespace concord::policies
