#include "concord/algos/sac.h"

#include <ATen/ops/cat.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/rand.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/zeros.h>
#include <c10/core/GradMode.h>
#include <c10/core/InferenceMode.h>
#include <gtest/gtest.h>
#include <torch/optim/adam.h>
#include <torch/utils.h>

#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "algos/pendulum_fixture.h"
#include "concord/algos/algorithm_registry.h"
#include "concord/core/checkpoint.h"
#include "concord/core/config.h"
#include "concord/core/optimizer_bytes.h"
#include "concord/envs/space.h"

namespace concord::algos {
namespace {

using test_util::random_pendulum_transitions;
using test_util::small_pendulum_sac_config;

at::Tensor vec(std::vector<float> values) { return at::tensor(values); }

// A module's parameters, flattened and copied.
at::Tensor snapshot(const torch::nn::Module& module) {
  std::vector<at::Tensor> parts;
  for (const at::Tensor& parameter : module.parameters()) parts.push_back(parameter.detach().reshape(-1).clone());
  return at::cat(parts);
}

at::Tensor param(torch::nn::Module& module, const std::string& name) { return module.named_parameters()[name]; }

// Makes Q(s, a) = value for every input: zero output weights, the bias at `value`.
void make_constant(nn::SoftQNetwork& q, float value) {
  c10::NoGradGuard no_grad;
  param(*q, "fc_q.weight").zero_();
  param(*q, "fc_q.bias").fill_(value);
}

// The hand-made batch: row 0 an ordinary step, row 1 terminated (no bootstrap), row 2 truncated
// (bootstraps: truncation is not stored, next_observations holds the final observation).
struct HandBatch {
  at::Tensor rewards = vec({1.0f, 2.0f, -0.5f});
  at::Tensor terminated = vec({0.0f, 1.0f, 0.0f});
  at::Tensor next_observations =
      at::tensor(std::vector<float>{0.1f, 0.2f, 0.3f, 1.0f, -1.0f, 0.5f, -0.3f, 0.0f, 0.7f}).reshape({3, 3});
};

// y = r + gamma * (1 - d) * (min(Q1_t, Q2_t) - alpha * log pi(a'|s')), min = 1 here, with a' and
// its log-probability computed by hand in double precision from the same noise.
TEST(Sac, SoftQTargetBootstrapsTruncationNotTermination) {
  SacConfig config = small_pendulum_sac_config();
  config.gamma = 0.9;
  Sac sac(config);
  nn::SoftQNetwork target1 = sac.targets()->qf1;
  nn::SoftQNetwork target2 = sac.targets()->qf2;
  make_constant(target1, 1.0f);
  make_constant(target2, 3.0f);
  {
    c10::NoGradGuard no_grad;
    sac.model()->log_alpha.fill_(std::log(0.5));
  }
  ASSERT_NEAR(sac.alpha(), 0.5, 1e-6);
  const HandBatch batch;

  torch::manual_seed(7);
  // The discount the replay stores for a one-step transition: gamma, or 0 after a termination.
  const at::Tensor y = sac.soft_q_target(batch.rewards, (1.0 - batch.terminated) * 0.9, batch.next_observations);
  torch::manual_seed(7);
  const at::Tensor noise = at::randn({3, 1});  // the one draw soft_q_target makes
  const auto policy = sac.model()->actor->forward(batch.next_observations);

  ASSERT_EQ(y.sizes(), (std::vector<int64_t>{3}));
  for (int64_t i = 0; i < 3; ++i) {
    const double mean = policy.mean[i][0].item<double>();
    const double log_std = policy.log_std[i][0].item<double>();
    const double eps = noise[i][0].item<double>();
    const double u = mean + std::exp(log_std) * eps;
    const double log_pi = -0.5 * eps * eps - log_std - 0.5 * std::log(2.0 * M_PI) -
                          std::log(2.0 * (1.0 - std::tanh(u) * std::tanh(u)) + 1e-6);
    const double r = batch.rewards[i].item<double>();
    const double d = batch.terminated[i].item<double>();
    EXPECT_NEAR(y[i].item<double>(), r + 0.9 * (1.0 - d) * (1.0 - 0.5 * log_pi), 1e-4) << "row " << i;
  }
  EXPECT_FLOAT_EQ(y[1].item<float>(), 2.0f);  // terminated: the reward alone
}

TEST(Sac, SoftQTargetWithoutEntropyIsTheClippedDoubleQTarget) {
  SacConfig config = small_pendulum_sac_config();
  config.autotune = false;
  config.alpha = 0.0;
  config.gamma = 0.5;
  Sac sac(config);
  nn::SoftQNetwork target1 = sac.targets()->qf1;
  nn::SoftQNetwork target2 = sac.targets()->qf2;
  make_constant(target1, 4.0f);
  make_constant(target2, -2.0f);
  const HandBatch batch;
  const at::Tensor y = sac.soft_q_target(batch.rewards, (1.0 - batch.terminated) * 0.5, batch.next_observations);
  EXPECT_TRUE(y.allclose(vec({1.0f - 1.0f, 2.0f, -0.5f - 1.0f})));
}

TEST(Sac, UpdateReturnsNothingBeforeABatch) {
  torch::manual_seed(0);
  Sac sac(small_pendulum_sac_config());
  sac.observe(random_pendulum_transitions(7));  // one short of batch_size = 8
  const at::Tensor before = sac.flat_parameters().values().detach().clone();
  EXPECT_TRUE(sac.update(100, 0.5).empty());
  EXPECT_TRUE(sac.flat_parameters().values().equal(before));
  EXPECT_EQ(sac.gradient_steps_done(), 0);
  EXPECT_EQ(sac.updates(), 0);
  sac.observe(random_pendulum_transitions(1));
  const Metrics metrics = sac.update(101, 0.5);
  EXPECT_FALSE(metrics.empty());
  EXPECT_EQ(sac.gradient_steps_done(), 1);
}

TEST(Sac, TheActorAndAlphaLearnOnlyEveryPolicyFrequencySteps) {
  torch::manual_seed(1);
  SacConfig config = small_pendulum_sac_config();
  config.policy_frequency = 2;
  Sac sac(config);
  sac.observe(random_pendulum_transitions(32));
  const at::Tensor actor0 = snapshot(*sac.model()->actor);
  const at::Tensor critics0 = at::cat({snapshot(*sac.model()->qf1), snapshot(*sac.model()->qf2)});
  const double alpha0 = sac.alpha();

  const Metrics first = sac.update(11, 0.0);  // gradient step 1: critics only
  EXPECT_TRUE(snapshot(*sac.model()->actor).equal(actor0));
  EXPECT_EQ(sac.alpha(), alpha0);
  EXPECT_FALSE(at::cat({snapshot(*sac.model()->qf1), snapshot(*sac.model()->qf2)}).equal(critics0));
  EXPECT_EQ(first.count("losses/actor_loss"), 0u);
  EXPECT_EQ(first.count("losses/alpha_loss"), 0u);
  EXPECT_EQ(first.count("losses/qf1_loss"), 1u);

  const at::Tensor critics1 = at::cat({snapshot(*sac.model()->qf1), snapshot(*sac.model()->qf2)});
  const Metrics second = sac.update(12, 0.0);  // gradient step 2: critics, then the actor twice
  EXPECT_FALSE(snapshot(*sac.model()->actor).equal(actor0));
  EXPECT_NE(sac.alpha(), alpha0);
  EXPECT_FALSE(at::cat({snapshot(*sac.model()->qf1), snapshot(*sac.model()->qf2)}).equal(critics1));
  for (const char* name : {"losses/qf1_loss", "losses/qf2_loss", "losses/qf_values", "losses/actor_loss",
                           "losses/alpha", "losses/alpha_loss"}) {
    ASSERT_EQ(second.count(name), 1u) << name;
    EXPECT_TRUE(std::isfinite(second.at(name))) << name;
  }
  EXPECT_NEAR(second.at("losses/alpha"), sac.alpha(), 1e-6);

  const at::Tensor actor2 = snapshot(*sac.model()->actor);
  sac.update(13, 0.0);  // gradient step 3: critics only again
  EXPECT_TRUE(snapshot(*sac.model()->actor).equal(actor2));
}

// With policy_frequency = 3 the actor steps only at gradient steps 3, 6, ...; its Adam moments then
// show three steps, which one actor step at gradient step 3 would not: the second of two
// identical learners stops after a single actor step and they differ.
TEST(Sac, TheDelayedUpdateRunsPolicyFrequencyActorSteps) {
  SacConfig config = small_pendulum_sac_config();
  config.policy_frequency = 3;
  config.autotune = false;
  torch::manual_seed(2);
  Sac sac(config);
  sac.observe(random_pendulum_transitions(32));
  const at::Tensor actor0 = snapshot(*sac.model()->actor);
  sac.update(11, 0.0);
  sac.update(12, 0.0);
  EXPECT_TRUE(snapshot(*sac.model()->actor).equal(actor0));
  sac.update(13, 0.0);
  EXPECT_FALSE(snapshot(*sac.model()->actor).equal(actor0));
  core::Checkpoint checkpoint;
  sac.save(checkpoint);
  // Adam's state for the actor's parameters records three steps.
  torch::optim::Adam adam(sac.model()->actor->parameters());
  core::optimizer_from_bytes(checkpoint.tensors.at("optimizer/actor"), adam, torch::kCPU);
  const auto& state = static_cast<const torch::optim::AdamParamState&>(
      *adam.state().at(core::optimizer_state_key(sac.model()->actor->parameters().front())));
  EXPECT_EQ(state.step(), 3);
}

TEST(Sac, TargetsAreExactlyTauMixed) {
  torch::manual_seed(3);
  SacConfig config = small_pendulum_sac_config();
  config.tau = 0.25;
  config.target_network_frequency = 2;
  Sac sac(config);
  // The targets start as copies of the critics.
  EXPECT_TRUE(snapshot(*sac.targets()).equal(at::cat({snapshot(*sac.model()->qf1), snapshot(*sac.model()->qf2)})));
  sac.observe(random_pendulum_transitions(32));

  const at::Tensor targets0 = snapshot(*sac.targets());
  sac.update(11, 0.0);  // gradient step 1: no target update
  EXPECT_TRUE(snapshot(*sac.targets()).equal(targets0));
  sac.update(12, 0.0);  // gradient step 2: target = tau * Q + (1 - tau) * target
  const at::Tensor critics = at::cat({snapshot(*sac.model()->qf1), snapshot(*sac.model()->qf2)});
  const at::Tensor expected = 0.25 * critics + (1.0 - 0.25) * targets0;
  EXPECT_TRUE(snapshot(*sac.targets()).equal(expected));
  EXPECT_FALSE(expected.equal(targets0));
}

// L_alpha = -alpha * (log pi + target_entropy): alpha falls while the policy's entropy
// (-log pi) exceeds the target -action_dim, and rises while it is below. The policy's mean is 0
// and its log_std the given constant.
void expect_alpha_moves(double logstd_bias, bool rises) {
  torch::manual_seed(4);
  SacConfig config = small_pendulum_sac_config();
  config.policy_frequency = 1;
  Sac sac(config);
  nn::SquashedGaussianActor policy = sac.model()->actor;
  {
    c10::NoGradGuard no_grad;
    param(*policy, "fc_mean.weight").zero_();
    param(*policy, "fc_mean.bias").zero_();
    param(*policy, "fc_logstd.weight").zero_();
    param(*policy, "fc_logstd.bias").fill_(logstd_bias);
  }
  sac.observe(random_pendulum_transitions(32));
  EXPECT_DOUBLE_EQ(sac.alpha(), 1.0);  // log_alpha starts at 0
  EXPECT_DOUBLE_EQ(sac.target_entropy(), -1.0);
  const Metrics metrics = sac.update(11, 0.0);
  if (rises) {
    EXPECT_GT(sac.alpha(), 1.0);
    EXPECT_LT(metrics.at("losses/alpha_loss"), 0.0);
  } else {
    EXPECT_LT(sac.alpha(), 1.0);
    EXPECT_GT(metrics.at("losses/alpha_loss"), 0.0);
  }
  // Adam's first step moves log_alpha by the learning rate.
  EXPECT_NEAR(std::abs(std::log(sac.alpha())), config.q_lr, 1e-6);
}

// log_std = -1.5 (tanh(0) = 0): std 0.22 before the squashing, an entropy near 0.6 nats in the
// action's units, above the target -1.
TEST(Sac, AlphaFallsWhileTheEntropyIsAboveTheTarget) { expect_alpha_moves(0.0, /*rises=*/false); }
// log_std = -5: std 0.007, an entropy near -3.6 nats, below the target.
TEST(Sac, AlphaRisesWhileTheEntropyIsBelowTheTarget) { expect_alpha_moves(-100.0, /*rises=*/true); }

TEST(Sac, FixedAlphaDoesNotMove) {
  torch::manual_seed(5);
  SacConfig config = small_pendulum_sac_config();
  config.autotune = false;
  config.alpha = 0.3;
  config.policy_frequency = 1;
  Sac sac(config);
  sac.observe(random_pendulum_transitions(32));
  const Metrics metrics = sac.update(11, 0.0);
  EXPECT_DOUBLE_EQ(sac.alpha(), 0.3);
  EXPECT_NEAR(metrics.at("losses/alpha"), 0.3, 1e-7);
  EXPECT_EQ(metrics.count("losses/alpha_loss"), 0u);
  EXPECT_EQ(metrics.count("losses/actor_loss"), 1u);
}

TEST(Sac, ActsRandomlyInTheBoxBeforeLearningStarts) {
  torch::manual_seed(6);
  SacConfig config = small_pendulum_sac_config();
  config.network.action_dim = 2;
  config.network.action_low = {-2.0, 0.0};
  config.network.action_high = {2.0, 1.0};
  config.learning_starts = 100;
  Sac sac(config);
  c10::InferenceMode inference;
  const at::Tensor obs = at::zeros({4000, 3});  // one observation: a policy would barely vary
  ActingContext context;
  context.global_step = 99;
  const at::Tensor random = sac.actor().act(obs, context).actions;
  ASSERT_EQ(random.sizes(), (std::vector<int64_t>{4000, 2}));
  EXPECT_GE(random.select(1, 0).min().item<double>(), -2.0);
  EXPECT_LT(random.select(1, 0).max().item<double>(), 2.0);
  EXPECT_GE(random.select(1, 1).min().item<double>(), 0.0);
  EXPECT_LT(random.select(1, 1).max().item<double>(), 1.0);
  // Uniform: it spans the box with mean at its centre.
  EXPECT_LT(random.select(1, 0).min().item<double>(), -1.9);
  EXPECT_GT(random.select(1, 0).max().item<double>(), 1.9);
  EXPECT_NEAR(random.select(1, 0).mean().item<double>(), 0.0, 0.1);
  EXPECT_NEAR(random.select(1, 1).mean().item<double>(), 0.5, 0.03);

  // From learning_starts on, the policy: within the box too.
  context.global_step = 100;
  const at::Tensor sampled = sac.actor().act(obs, context).actions;
  EXPECT_GE(sampled.select(1, 0).min().item<double>(), -2.0);
  EXPECT_LE(sampled.select(1, 0).max().item<double>(), 2.0);
  EXPECT_GE(sampled.select(1, 1).min().item<double>(), 0.0);
  EXPECT_LE(sampled.select(1, 1).max().item<double>(), 1.0);
  EXPECT_LT((sampled.select(1, 0).max() - sampled.select(1, 0).min()).item<double>(),
            (random.select(1, 0).max() - random.select(1, 0).min()).item<double>());

  // Deterministic acting ignores the schedule: tanh(mean) * scale + bias.
  context.deterministic = true;
  context.global_step = 0;
  const at::Tensor mode = sac.actor().act(obs.slice(0, 0, 2), context).actions;
  EXPECT_TRUE(mode.equal(sac.model()->actor->deterministic_action(obs.slice(0, 0, 2))));
  // After training (global_step < 0): the stochastic policy, not random.
  context.deterministic = false;
  context.global_step = -1;
  EXPECT_EQ(sac.actor().act(obs, context).actions.sizes(), (std::vector<int64_t>{4000, 2}));
  EXPECT_TRUE(sac.actor().act(obs, context).extras.empty());
}

TEST(Sac, SaveLoadRoundTripContinuesIdentically) {
  SacConfig config = small_pendulum_sac_config();
  config.checkpoint_replay = true;
  torch::manual_seed(7);
  Sac a(config);
  a.observe(random_pendulum_transitions(40));
  for (int64_t step = 11; step < 16; ++step) a.update(step, 0.1);
  core::Checkpoint checkpoint;
  a.save(checkpoint);
  EXPECT_EQ(checkpoint.metadata["algorithm"], "sac");
  EXPECT_EQ(checkpoint.metadata["gradient_steps"], 5);

  torch::manual_seed(8);
  Sac b(config);
  b.load(checkpoint);
  EXPECT_TRUE(b.flat_parameters().values().equal(a.flat_parameters().values()));
  EXPECT_TRUE(snapshot(*b.targets()).equal(snapshot(*a.targets())));
  EXPECT_EQ(b.replay().size(), 40);
  EXPECT_EQ(b.gradient_steps_done(), 5);
  EXPECT_EQ(b.updates(), 5);

  // Same optimiser moments, replay sampler and (reseeded) policy noise: the same next update.
  torch::manual_seed(9);
  const Metrics next_a = a.update(16, 0.2);
  torch::manual_seed(9);
  const Metrics next_b = b.update(16, 0.2);
  EXPECT_EQ(next_a, next_b);
  EXPECT_TRUE(b.flat_parameters().values().equal(a.flat_parameters().values()));
  EXPECT_TRUE(snapshot(*b.targets()).equal(snapshot(*a.targets())));
}

TEST(Sac, CheckpointWithoutReplayKeepsTheReplay) {
  torch::manual_seed(10);
  Sac a(small_pendulum_sac_config());
  a.observe(random_pendulum_transitions(20));
  core::Checkpoint checkpoint;
  a.save(checkpoint);
  for (const auto& entry : checkpoint.tensors) EXPECT_NE(entry.first.rfind("replay/", 0), 0u) << entry.first;
  Sac b(small_pendulum_sac_config());
  b.observe(random_pendulum_transitions(3));
  b.load(checkpoint);
  EXPECT_EQ(b.replay().size(), 3);
}

TEST(Sac, LoadRefusesAnotherAlgorithmAndChangesNothing) {
  torch::manual_seed(11);
  Sac a(small_pendulum_sac_config());
  core::Checkpoint checkpoint;
  a.save(checkpoint);
  checkpoint.metadata["algorithm"] = "ppo";
  Sac b(small_pendulum_sac_config());
  const at::Tensor before = b.flat_parameters().values().detach().clone();
  try {
    b.load(checkpoint);
    FAIL() << "loaded a ppo checkpoint";
  } catch (const core::CheckpointError& error) {
    EXPECT_NE(error.problem().find("\"ppo\""), std::string::npos) << error.problem();
  }
  EXPECT_TRUE(b.flat_parameters().values().equal(before));
}

TEST(Sac, LoadRefusesMismatchesBeforeChangingAnything) {
  torch::manual_seed(12);
  Sac a(small_pendulum_sac_config());
  a.observe(random_pendulum_transitions(10));
  a.update(11, 0.0);
  core::Checkpoint good;
  a.save(good);

  Sac b(small_pendulum_sac_config());
  const at::Tensor before = b.flat_parameters().values().detach().clone();
  const at::Tensor targets_before = snapshot(*b.targets());
  const auto expect_refused = [&](const core::Checkpoint& checkpoint, const std::string& words) {
    try {
      b.load(checkpoint);
      ADD_FAILURE() << "loaded; expected a problem with " << words;
    } catch (const core::CheckpointError& error) {
      EXPECT_NE(error.problem().find(words), std::string::npos) << error.problem();
    }
    EXPECT_TRUE(b.flat_parameters().values().equal(before));
    EXPECT_TRUE(snapshot(*b.targets()).equal(targets_before));
  };

  core::Checkpoint no_target = good;
  no_target.tensors.erase("target/qf2.fc_q.bias");
  expect_refused(no_target, "target/qf2.fc_q.bias");

  core::Checkpoint bad_optimizer = good;
  bad_optimizer.tensors["optimizer/q"] = at::zeros({5}, at::kByte);
  expect_refused(bad_optimizer, "optimizer/q");

  core::Checkpoint other_bounds = good;
  other_bounds.tensors["model/actor.action_scale"] = vec({1.0f});
  expect_refused(other_bounds, "action bounds");

  core::Checkpoint extra = good;
  extra.tensors["model/qf3.fc_q.bias"] = at::zeros({1});
  expect_refused(extra, "model/qf3.fc_q.bias");

  SacConfig wider = small_pendulum_sac_config();
  wider.network.hidden_sizes = {32, 16};
  torch::manual_seed(13);
  Sac c(wider);
  core::Checkpoint wrong_shape;
  c.save(wrong_shape);
  expect_refused(wrong_shape, "shape");
}

TEST(Sac, RefusesADiscreteActionSpaceInOneLine) {
  SacConfig config = small_pendulum_sac_config();
  config.network.action_kind = nn::ActionKind::kDiscrete;
  config.network.action_dim = 3;
  try {
    Sac sac(config);
    FAIL() << "built SAC for discrete actions";
  } catch (const std::invalid_argument& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("continuous"), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
  config = small_pendulum_sac_config();
  config.network.torso = "cnn";
  EXPECT_THROW(Sac{config}, std::invalid_argument);
  config = small_pendulum_sac_config();
  config.network.orthogonal_init = false;  // its layers have PyTorch's defaults already
  EXPECT_THROW(Sac{config}, std::invalid_argument);
}

TEST(Sac, ValidateListsBadHyperparameters) {
  SacConfig config = small_pendulum_sac_config();
  config.tau = 0.0;
  config.policy_frequency = 0;
  try {
    config.validate();
    FAIL();
  } catch (const std::invalid_argument& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("tau=0"), std::string::npos) << message;
    EXPECT_NE(message.find("policy_frequency=0"), std::string::npos) << message;
  }
}

TEST(Sac, ObserveRequiresEveryStoredField) {
  Sac sac(small_pendulum_sac_config());
  TensorMap step = random_pendulum_transitions(2);
  step.erase(transition::kNextObservations);
  EXPECT_THROW(sac.observe(step), std::invalid_argument);
  // Truncation is not needed: next_observations already bootstraps it.
  step = random_pendulum_transitions(2);
  step.erase(transition::kTruncated);
  sac.observe(step);
  EXPECT_EQ(sac.replay().size(), 2);
  // One action dimension may come as [B].
  step = random_pendulum_transitions(2);
  step[transition::kActions] = step[transition::kActions].squeeze(1);
  sac.observe(step);
  EXPECT_EQ(sac.replay().size(), 4);
}

TEST(Sac, TheModelClonesDeeply) {
  torch::manual_seed(15);
  Sac sac(small_pendulum_sac_config());
  const auto copy = std::dynamic_pointer_cast<SacModelImpl>(sac.model()->clone());
  ASSERT_NE(copy, nullptr);
  EXPECT_TRUE(snapshot(*copy).equal(snapshot(*sac.model())));
  EXPECT_TRUE(copy->actor->action_scale().equal(sac.model()->actor->action_scale()));
  {
    c10::NoGradGuard no_grad;
    copy->log_alpha.fill_(3.0);
  }
  EXPECT_DOUBLE_EQ(sac.alpha(), 1.0);
}

TEST(Sac, TheRegistryBuildsItAndRefusesDiscreteActions) {
  core::ConfigSchema schema;
  declare_algorithm_keys(schema);
  core::Config config(schema);
  const envs::Space observations = envs::Space::box({3}, -8.0f, 8.0f);
  const std::unique_ptr<Learner> learner =
      make_learner("sac", config, observations, envs::Space::box({1}, -2.0f, 2.0f));
  const auto* sac = dynamic_cast<const Sac*>(learner.get());
  ASSERT_NE(sac, nullptr);
  EXPECT_EQ(sac->config().learning_starts, 5000);
  EXPECT_EQ(sac->config().policy_frequency, 2);
  EXPECT_THROW(make_learner("sac", config, observations, envs::Space::discrete(2)), std::invalid_argument);
}

// With gSDE the acting noise is held for a collection of train_frequency steps (and, with
// sde_sample_freq, for that many steps within it); each env has its own exploration matrix.
TEST(Sac, GsdeActingHoldsTheNoiseForACollection) {
  torch::manual_seed(9);
  SacConfig config = small_pendulum_sac_config();
  config.use_sde = true;
  config.log_std_init = 0.0;
  config.learning_starts = 0;
  config.train_frequency = 4;
  Sac sac(config);
  EXPECT_EQ(sac.model()->actor->named_parameters()["log_std"].sizes(), (std::vector<int64_t>{16, 1}));
  c10::InferenceMode inference;
  const at::Tensor obs = at::randn({1, 3}).repeat({2, 1});
  ActingContext context;
  std::vector<at::Tensor> actions;
  for (int64_t step = 0; step < 12; step += 2) {
    context.global_step = step;
    actions.push_back(sac.actor().act(obs, context).actions.clone());
  }
  EXPECT_FALSE(at::equal(actions[0][0], actions[0][1])) << "one exploration matrix per env";
  EXPECT_TRUE(at::equal(actions[0], actions[1])) << "steps 0 and 2: one collection";
  EXPECT_FALSE(at::equal(actions[1], actions[2])) << "step 4 starts the next collection";
  EXPECT_TRUE(at::equal(actions[2], actions[3]));

  config.sde_sample_freq = 2;
  Sac every_two(config);
  context.global_step = 0;
  const at::Tensor first = every_two.actor().act(obs, context).actions.clone();
  context.global_step = 1;
  EXPECT_TRUE(at::equal(every_two.actor().act(obs, context).actions, first));
  context.global_step = 2;
  EXPECT_FALSE(at::equal(every_two.actor().act(obs, context).actions, first));

  config.sde_sample_freq = 0;
  EXPECT_THROW(Sac{config}, std::invalid_argument);
}

// A one-step bandit (gamma = 0): reward -(a - 0.5)^2 whatever the observation. The deterministic
// action moves to 0.5.
TEST(Sac, LearnsABandit) {
  for (const bool sde : {false, true}) {
    SCOPED_TRACE(sde ? "gSDE" : "state-dependent log std");
    torch::manual_seed(14);
    SacConfig config = small_pendulum_sac_config();
    config.use_sde = sde;
    config.gamma = 0.0;
    config.buffer_size = 2000;
    config.batch_size = 64;
    config.learning_starts = 0;
    config.policy_frequency = 1;
    config.q_lr = 3e-3;
    config.policy_lr = 3e-3;
    config.network.hidden_sizes = {32, 32};
    Sac sac(config);
    const at::Tensor obs = at::randn({16, 3});
    ActingContext context;
    // gSDE's one exploration matrix per gradient step makes the batch's noise correlated, so its
    // policy wanders more on the way (measured: within 0.11 of 0.5 from step 800 on).
    const int64_t steps = sde ? 1200 : 400;
    for (int64_t step = 0; step < steps; ++step) {
      context.global_step = step * 16;
      at::Tensor actions;
      {
        c10::InferenceMode inference;
        actions = sac.actor().act(obs, context).actions.clone();
      }
      TensorMap step_data;
      step_data[transition::kObservations] = obs;
      step_data[transition::kActions] = actions;
      step_data[transition::kRewards] = -(actions.squeeze(1) - 0.5).square();
      step_data[transition::kTerminated] = at::ones({16});
      step_data[transition::kTruncated] = at::zeros({16});
      step_data[transition::kNextObservations] = obs;
      sac.observe(step_data);
      sac.update(context.global_step, 0.0);
    }
    c10::InferenceMode inference;
    context.deterministic = true;
    const at::Tensor mode = sac.actor().act(obs, context).actions;
    EXPECT_NEAR(mode.mean().item<double>(), 0.5, 0.15);
  }
}

TEST(Sac, AnActorReplicaActsWithThePolicysSliceOfTheFlatBuffer) {
  torch::manual_seed(22);
  Sac sac(small_pendulum_sac_config());
  EXPECT_TRUE(sac.observes_while_updating());
  const std::unique_ptr<ActorReplica> replica = sac.make_actor_replica();
  ASSERT_NE(replica, nullptr);
  const at::Tensor o = at::randn({6, 3});
  ActingContext mode;
  mode.deterministic = true;
  const auto learner_actions = [&] { return sac.actor().act(o, mode).actions; };
  const at::Tensor before = learner_actions();
  EXPECT_TRUE(replica->act(o, mode).actions.equal(before));

  // Everything the learner holds moves (policy, critics, log alpha); the replica does not until
  // assign(), which takes the whole flat buffer and keeps the policy's part.
  {
    c10::NoGradGuard no_grad;
    sac.flat_parameters().values().add_(at::randn({sac.flat_parameters().numel()}) * 0.3);
  }
  const at::Tensor after = learner_actions();
  ASSERT_FALSE(after.allclose(before));
  EXPECT_TRUE(replica->act(o, mode).actions.equal(before));
  replica->assign(sac.flat_parameters().values().detach().clone());
  EXPECT_TRUE(replica->act(o, mode).actions.equal(after));

  // Random acting before learning_starts, as the learner's actor; in the bounds after it.
  ActingContext early;
  early.global_step = 0;
  const at::Tensor random_actions = replica->act(at::zeros({2000, 3}), early).actions;
  EXPECT_NEAR(random_actions.mean().item<double>(), 0.0, 0.1);
  EXPECT_GT(random_actions.abs().max().item<double>(), 1.9);
  ActingContext later;
  later.global_step = 100;
  EXPECT_LE(replica->act(at::randn({200, 3}), later).actions.abs().max().item<double>(), 2.0);

  EXPECT_THROW(replica->assign(at::zeros({7})), std::invalid_argument);
}

TEST(Sac, ObserveMayRunOnAnotherThreadWhileUpdating) {
  torch::manual_seed(23);
  SacConfig config = small_pendulum_sac_config();
  config.buffer_size = 4096;
  Sac sac(config);
  sac.observe(random_pendulum_transitions(16));
  std::thread observer([&sac] {
    for (int i = 0; i < 500; ++i) sac.observe(random_pendulum_transitions(2));
  });
  int64_t updates = 0;
  for (int i = 0; i < 200; ++i) updates += sac.update(10 + i, 0.5).empty() ? 0 : 1;
  observer.join();
  EXPECT_EQ(updates, 200);
  EXPECT_EQ(sac.replay().size(), 1016);
  EXPECT_TRUE(sac.flat_parameters().values().isfinite().all().item<bool>());
}

}  // namespace
}  // namespace concord::algos
