#include "concord/policies/multi_learner.h"

#include <stdexcept>

#include <torch/torch.h>

#include "concord/algos/on_policy_learner.h"
#include "concord/core/config_problems.h"
#include "concord/sync/sync_registry.h"

namespace concord::policies {

void MultiLearnerConfig::validate() const {
  core::ConfigProblems problems;
  problems.check(check_every >= 0, "check_every", check_every, ">= 0");
  problems.check(merge_counts_every >= 0, "merge_counts_every", merge_counts_every, ">= 0");
  problems.throw_if_any("policy.multi_learner config");
}

const core::ConfigFields<MultiLearnerConfig>& MultiLearnerConfig::fields() {
  static const core::ConfigFields<MultiLearnerConfig> kFields = {
      {"check_every", &MultiLearnerConfig::check_every,
       "Every this many updates, check that every rank's parameters equal rank 0's (0: never)"},
      {"merge_counts_every", &MultiLearnerConfig::merge_counts_every,
       "Updates between merges of the ranks' exploration counts (explore.bonus; 0: never, each rank counts alone)"},
  };
  return kFields;
}

MultiLearnerPolicy::MultiLearnerPolicy(const MultiLearnerConfig& config, std::unique_ptr<envs::VectorEnv> env,
                                       algos::Learner& learner, torch::Device device, comm::Communicator& communicator,
                                       explore::Bonus* bonus)
    : learner_(learner),
      communicator_(communicator),
      config_(core::validated(config)),
      bonus_(bonus),
      loop_(std::move(env), learner, device, bonus, communicator.world_size()) {}

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
  lockstep.on_update = [&](const TrainingState& now, const algos::Metrics& metrics,
                           const core::EpisodeStats& episodes) {
    {
      torch::NoGradGuard no_grad;
      for (auto& buffer : learner_.network().named_buffers()) communicator_.broadcast(buffer.value(), 0);
    }
    if (bonus_ != nullptr && config_.merge_counts_every > 0 && now.updates % config_.merge_counts_every == 0) {
      bonus_->merge_counts(communicator_);
    }
    if (config_.check_every > 0 && now.updates % config_.check_every == 0 &&
        learner_.sync_strategy().keeps_replicas_identical()) {
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

std::unique_ptr<Policy> make_multi_learner_policy(const PolicyContext& context, const MultiLearnerConfig& config) {
  comm::Communicator& communicator = *context.communicator;
  envs::VectorEnvConfig rank_envs = context.env_config;
  if (rank_envs.num_envs % communicator.world_size() != 0) {
    throw std::invalid_argument("policy 'multi_learner': env.num_envs = " + std::to_string(rank_envs.num_envs) +
                                " must be divisible by its " + std::to_string(communicator.world_size()) + " ranks");
  }
  rank_envs.num_envs /= communicator.world_size();
  auto policy = std::make_unique<MultiLearnerPolicy>(config, std::make_unique<envs::VectorEnv>(rank_envs),
                                                     context.learner, context.device, communicator, context.bonus);
  // Attached last, as the strategy's first act is a collective (rank 0's parameters to every replica).
  context.learner.set_sync_strategy(
      sync::make_sync_strategy(context.config.get_string("sync.strategy"), context.config, communicator));
  return policy;
}

std::unique_ptr<Policy> make_multi_learner_on_policy(const PolicyContext& context, const MultiLearnerConfig& config) {
  if (context.on_policy_learner().gradient_steps_per_update() == 0) {
    throw std::invalid_argument(
        "policy 'multi_learner' needs every rank to take the same number of gradient steps per update, but the "
        "algorithm stops early on its own data (set algo.ppo.target_kl = 0)");
  }
  return make_multi_learner_policy(context, config);
}

}  // namespace concord::policies
