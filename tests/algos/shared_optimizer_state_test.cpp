// Shared optimiser statistics (A3C's shared RMSProp) and learner replicas over shared parameters.
#include "concord/algos/shared_optimizer_state.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "concord/algos/a2c.h"
#include "concord/algos/ppo.h"

namespace concord::algos {
namespace {

TEST(SharedOptimizerState, ReplicaStepsUpdateThePrimarysRmspropStatistics) {
  torch::Tensor primary_value = torch::zeros({2}).requires_grad_(true);
  primary_value.mutable_grad() = torch::zeros({2});
  torch::Tensor replica_value = primary_value.detach().requires_grad_(true);  // same storage
  replica_value.mutable_grad() = torch::zeros({2});
  const auto options = torch::optim::RMSpropOptions(0.1).alpha(0.5).eps(1e-8);
  torch::optim::RMSprop primary({primary_value}, options);
  torch::optim::RMSprop replica({replica_value}, options);
  share_optimizer_state(replica, primary);
  // Materialising the statistics did not move the parameters.
  EXPECT_TRUE(torch::equal(primary_value.detach(), torch::zeros({2})));

  replica_value.mutable_grad().copy_(torch::tensor({2.0f, -4.0f}));
  replica.step();
  // square_avg = 0.5 * 0 + 0.5 * g^2 = {2, 8}; step = -lr * g / sqrt(square_avg).
  const auto& state = static_cast<torch::optim::RMSpropParamState&>(*primary.state().begin()->second);
  EXPECT_TRUE(torch::allclose(state.square_avg(), torch::tensor({2.0f, 8.0f})));
  EXPECT_TRUE(
      torch::allclose(primary_value.detach(), torch::tensor({-0.2f / std::sqrt(2.0f), 0.4f / std::sqrt(8.0f)})));
}

TEST(SharedOptimizerState, RefusesAMixOfOptimisers) {
  torch::Tensor a = torch::zeros({1}).requires_grad_(true);
  a.mutable_grad() = torch::zeros({1});
  torch::Tensor b = a.detach().requires_grad_(true);
  b.mutable_grad() = torch::zeros({1});
  torch::optim::RMSprop rmsprop({a}, torch::optim::RMSpropOptions(0.1));
  torch::optim::Adam adam({b}, torch::optim::AdamOptions(0.1));
  EXPECT_THROW(share_optimizer_state(adam, rmsprop), std::logic_error);
}

A2cConfig tiny_a2c() {
  A2cConfig config;
  config.network.obs_shape = {3};
  config.network.action_dim = 2;
  config.num_steps = 2;
  return config;
}

Rollout tiny_rollout() {
  Rollout rollout;
  rollout.observations = torch::randn({2, 2, 3});
  rollout.actions = torch::tensor({{0, 1}, {1, 0}}, torch::kLong);
  rollout.log_probs = torch::full({2, 2}, -0.7);
  rollout.values = torch::zeros({2, 2});
  rollout.rewards = torch::ones({2, 2});
  rollout.terminated = torch::zeros({2, 2});
  rollout.truncated = torch::zeros({2, 2});
  rollout.final_observations = torch::zeros({2, 2, 3});
  rollout.bootstrap_value = torch::zeros({2});
  return rollout;
}

TEST(SharedReplica, A2cReplicaUpdatesThePrimarysParameters) {
  torch::manual_seed(3);
  A2c primary(tiny_a2c());
  const torch::Tensor before = primary.flat_parameters().values().detach().clone();
  std::unique_ptr<algos::OnPolicyLearner> replica = primary.make_shared_replica();
  EXPECT_TRUE(torch::equal(replica->flat_parameters().values().detach(), before));
  replica->update(tiny_rollout(), 0.0);
  EXPECT_FALSE(torch::equal(primary.flat_parameters().values().detach(), before));
  EXPECT_TRUE(torch::equal(primary.flat_parameters().values().detach(), replica->flat_parameters().values().detach()));
  // The gradient stayed in the replica.
  EXPECT_EQ(primary.flat_parameters().gradient().abs().sum().item<float>(), 0.0f);
}

TEST(SharedReplica, PpoReportsItsGradientStepsPerUpdate) {
  PpoConfig config;
  config.network.obs_shape = {3};
  config.network.action_dim = 2;
  config.update_epochs = 3;
  config.num_minibatches = 2;
  EXPECT_EQ(Ppo(config).gradient_steps_per_update(), 6);
  EXPECT_EQ(A2c(tiny_a2c()).gradient_steps_per_update(), 1);
}

}  // namespace
}  // namespace concord::algos
