// The Bonus hook as the policies apply it: the learner's rewards get the bonus, the rollout's
// other tensors are shared, and the metrics report bonus and environment reward apart.
#include <memory>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "concord/explore/count_bonus.h"
#include "concord/explore/exact_counter.h"
#include "concord/explore/sim_hash.h"
#include "concord/policies/runtime/exploration_bonus.h"

namespace concord::policies {
namespace {

TEST(ExplorationBonus, AddsTheBonusOfEachStepsStateToItsReward) {
  explore::CountBonus bonus(std::make_unique<explore::SimHash>(3, 32, 1), std::make_unique<explore::ExactCounter>(32),
                            /*beta=*/1.0);
  algos::Rollout rollout;
  // T = 2, B = 2: states e0, e1 at t = 0 and e0, e2 at t = 1, so e0 is counted twice.
  rollout.observations =
      torch::stack({torch::eye(3).narrow(0, 0, 2), torch::eye(3).index_select(0, torch::tensor({0, 2}))});
  rollout.rewards = torch::tensor({{0.0f, 1.0f}, {0.5f, 0.0f}});
  rollout.values = torch::zeros({2, 2});

  algos::Metrics metrics;
  const algos::Rollout learned = runtime::with_bonus(bonus, rollout, metrics);
  const float half = static_cast<float>(1.0 / std::sqrt(2.0));
  EXPECT_TRUE(torch::allclose(learned.rewards, torch::tensor({{half, 2.0f}, {0.5f + half, 1.0f}})));
  EXPECT_TRUE(learned.values.is_same(rollout.values));
  EXPECT_TRUE(torch::equal(rollout.rewards, torch::tensor({{0.0f, 1.0f}, {0.5f, 0.0f}})));  // untouched
  EXPECT_NEAR(metrics.at("charts/bonus_mean"), (2 * half + 2.0) / 4.0, 1e-6);
  EXPECT_NEAR(metrics.at("charts/env_reward_mean"), 1.5 / 4.0, 1e-6);
}

}  // namespace
}  // namespace concord::policies
