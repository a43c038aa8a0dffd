#include "concord/policies/runtime/exploration_bonus.h"
#include "concord/policies/runtime/metric_names.h"

#include <stdexcept>

#include <torch/torch.h>

namespace concord::policies::runtime {

algos::Rollout with_bonus(explore::Bonus& bonus, const algos::Rollout& rollout, algos::Metrics& metrics) {
  const int64_t steps = rollout.rewards.size(0);
  const int64_t envs = rollout.rewards.size(1);
  // Bonuses hash and count float states, whatever dtype the env observes in.
  const torch::Tensor states = rollout.observations.reshape({steps * envs, -1}).to(torch::kFloat32);
  const torch::Tensor bonuses = bonus.visit(states).reshape({steps, envs}).to(rollout.rewards.device());

  algos::Rollout learned = rollout;
  learned.rewards = rollout.rewards + bonuses;
  metrics[metric::kBonusMean] = bonuses.mean().item<double>();
  metrics[metric::kEnvRewardMean] = rollout.rewards.mean().item<double>();
  return learned;
}

void refuse_bonus_off_policy(const explore::Bonus* bonus, const algos::Learner& learner) {
  if (bonus != nullptr && learner.family() != algos::Family::kOnPolicy) {
    throw std::invalid_argument(
        "explore.bonus adds to the rewards of on-policy rollouts; this algorithm learns off-policy from replay (set "
        "explore.bonus = \"none\")");
  }
}

}  // namespace concord::policies::runtime
