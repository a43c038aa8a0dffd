#include "concord/algos/ppo.h"

#include <ATen/Context.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/rand.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/zeros.h>
#include <c10/core/GradMode.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include "concord/algos/reward_scaler.h"
#include "concord/core/checkpoint.h"

#include "algos/tensor_test_util.h"

namespace concord::algos {
namespace {

using namespace test_util;

// CartPole-shaped: 4-dim observations, 2 actions; a short rollout so updates are quick.
PpoConfig small_config() {
  PpoConfig config;
  config.num_steps = 8;
  config.network = cartpole_network();
  return config;
}

// T x B random steps (see test_util::random_rollout), a termination at t = 2 of column 0 and a
// truncation at t = 4 of the last column.
Rollout synthetic_rollout(nn::ActorCritic& model, int64_t steps, int64_t envs) {
  return test_util::random_rollout(model, steps, envs, /*terminated_at=*/2, /*truncated_at=*/4);
}

// The hand-worked minibatch, clip_coef = 0.2:
//   sample 0: ratio 1.1 (inside [0.8, 1.2]),  A = +1: max(-1.1, -1.1)       = -1.1
//   sample 1: ratio 1.5 (above 1.2),          A = +2: max(-3.0, -2 * 1.2)   = -2.4 (clipped)
//   sample 2: ratio 0.5 (below 0.8),          A = -1: max(0.5, 1 * 0.8)     =  0.8 (clipped)
//   policy_loss = (-1.1 - 2.4 + 0.8) / 3 = -0.9
// Values (old -> new, return R), the clipped value being old + clip(new - old, -0.2, 0.2):
//   sample 0: 1 -> 1.1,  R = 2: unclipped 0.81, clipped (1.1 - 2)^2  = 0.81 -> 0.81
//   sample 1: 0 -> 1,    R = 1: unclipped 0,    clipped (0.2 - 1)^2  = 0.64 -> 0.64
//   sample 2: 0 -> -1,   R = 1: unclipped 4,    clipped (-0.2 - 1)^2 = 1.44 -> 4
//   value_loss = 0.5 * (0.81 + 0.64 + 4) / 3 = 0.9083333 (unclipped: 0.5 * 4.81 / 3 = 0.8016667)
// Entropy [0.6, 0.5, 0.4] -> 0.5.
struct HandBatch {
  at::Tensor old_log_probs = vec({-1.0f, -2.0f, -0.5f});
  at::Tensor new_log_probs = old_log_probs + vec({1.1f, 1.5f, 0.5f}).log();
  at::Tensor advantages = vec({1.0f, 2.0f, -1.0f});
  at::Tensor old_values = vec({1.0f, 0.0f, 0.0f});
  at::Tensor new_values = vec({1.1f, 1.0f, -1.0f});
  at::Tensor returns = vec({2.0f, 1.0f, 1.0f});
  at::Tensor entropy = vec({0.6f, 0.5f, 0.4f});
};

TEST(PpoLossTest, ClippedSurrogateOnHandWorkedBatch) {
  HandBatch b;
  b.new_log_probs.requires_grad_(true);
  b.new_values.requires_grad_(true);
  const PpoLoss loss = ppo_loss(b.new_log_probs, b.old_log_probs, b.advantages, b.new_values, b.old_values, b.returns,
                                b.entropy, /*clip_coef=*/0.2,
                                /*clip_vloss=*/true, /*ent_coef=*/0.01, /*vf_coef=*/0.5);
  EXPECT_NEAR(loss.policy_loss.item<double>(), -0.9, kTol);
  EXPECT_NEAR(loss.value_loss.item<double>(), 0.5 * 5.45 / 3.0, kTol);
  EXPECT_NEAR(loss.entropy.item<double>(), 0.5, kTol);
  // -0.9 - 0.01 * 0.5 + 0.5 * 0.9083333 = -0.4508333
  EXPECT_NEAR(loss.loss.item<double>(), -0.9 - 0.005 + 0.5 * 0.5 * 5.45 / 3.0, kTol);

  // Samples 1 and 2 are clipped: 2 of 3.
  EXPECT_NEAR(loss.clipfrac.item<double>(), 2.0 / 3.0, kTol);
  // approx_kl = mean((r - 1) - log r) = mean(0.1 - 0.0953102, 0.5 - 0.4054651, -0.5 + 0.6931472)
  EXPECT_NEAR(loss.approx_kl.item<double>(), (0.0046898 + 0.0945349 + 0.1931472) / 3.0, kTol);
  // old_approx_kl = mean(-log r) = -(0.0953102 + 0.4054651 - 0.6931472) / 3
  EXPECT_NEAR(loss.old_approx_kl.item<double>(), 0.1923719 / 3.0, kTol);

  // Only the unclipped sample 0 passes a policy gradient: d/dlogp (-A r / 3) = -1.1 / 3.
  // Value gradients (times vf_coef 0.5): sample 0: (1.1 - 2) / 3 * 0.5 = -0.15; sample 1 takes
  // the clipped branch, flat outside the clip range: 0; sample 2: (-1 - 1) / 3 * 0.5 = -1/3.
  loss.loss.backward();
  const at::Tensor lp_grad = b.new_log_probs.grad();
  EXPECT_NEAR(lp_grad[0].item<double>(), -1.1 / 3.0, kTol);
  EXPECT_NEAR(lp_grad[1].item<double>(), 0.0, kTol);
  EXPECT_NEAR(lp_grad[2].item<double>(), 0.0, kTol);
  const at::Tensor v_grad = b.new_values.grad();
  EXPECT_NEAR(v_grad[0].item<double>(), -0.15, kTol);
  EXPECT_NEAR(v_grad[1].item<double>(), 0.0, kTol);
  EXPECT_NEAR(v_grad[2].item<double>(), -1.0 / 3.0, kTol);

  EXPECT_FALSE(loss.policy_loss.requires_grad());
  EXPECT_FALSE(loss.approx_kl.requires_grad());
}

TEST(PpoLossTest, UnclippedValueLoss) {
  const HandBatch b;
  const PpoLoss loss = ppo_loss(b.new_log_probs, b.old_log_probs, b.advantages, b.new_values, b.old_values, b.returns,
                                b.entropy, 0.2, /*clip_vloss=*/false, 0.0, 1.0);
  // 0.5 * (0.81 + 0 + 4) / 3
  EXPECT_NEAR(loss.value_loss.item<double>(), 0.5 * 4.81 / 3.0, kTol);
  EXPECT_NEAR(loss.loss.item<double>(), -0.9 + 0.5 * 4.81 / 3.0, kTol);
}

TEST(PpoLossTest, RejectsMismatchedShapes) {
  const HandBatch b;
  expect_invalid_argument(
      [&] {
        ppo_loss(b.new_log_probs, b.old_log_probs, vec({1.0f, 2.0f}), b.new_values, b.old_values, b.returns, b.entropy,
                 0.2, true, 0.01, 0.5);
      },
      {"advantages"});
}

TEST(PpoConfigTest, ValidationPrintsEveryBadValue) {
  PpoConfig config = small_config();
  config.learning_rate = -1.0;
  config.num_minibatches = 0;
  config.gae_lambda = 1.5;
  expect_invalid_argument([&] { Ppo ppo(config); }, {"learning_rate=-1", "num_minibatches=0", "gae_lambda=1.5"});
}

TEST(PpoTest, UpdateChangesParametersAndReportsCleanRlMetrics) {
  at::manual_seed(1);
  Ppo ppo(small_config());
  nn::ActorCritic model = ppo.model();
  const Rollout rollout = synthetic_rollout(model, 8, 2);
  const std::vector<at::Tensor> before = parameter_copies(model);

  const Metrics metrics = ppo.update(rollout, /*progress=*/0.0);

  bool changed = false;
  const std::vector<at::Tensor> after = model->parameters();
  for (size_t i = 0; i < before.size(); ++i) changed = changed || !before[i].equal(after[i]);
  EXPECT_TRUE(changed);
  EXPECT_EQ(ppo.updates(), 1);
  for (const char* name : {"losses/value_loss", "losses/policy_loss", "losses/entropy", "losses/approx_kl",
                           "losses/old_approx_kl", "losses/clipfrac", "losses/explained_variance",
                           "charts/learning_rate", "charts/clip_coef", "charts/ent_coef", "charts/update_epochs"}) {
    ASSERT_EQ(metrics.count(name), 1u) << name;
    EXPECT_TRUE(std::isfinite(metrics.at(name))) << name << " = " << metrics.at(name);
  }
  EXPECT_EQ(metrics.size(), 11u);
  EXPECT_DOUBLE_EQ(metrics.at("charts/learning_rate"), 2.5e-4);
  EXPECT_DOUBLE_EQ(metrics.at("charts/clip_coef"), 0.2);
  EXPECT_DOUBLE_EQ(metrics.at("charts/ent_coef"), small_config().ent_coef);
  EXPECT_DOUBLE_EQ(metrics.at("charts/update_epochs"), 4.0);
  EXPECT_GT(metrics.at("losses/entropy"), 0.0);
}

TEST(PpoTest, AnnealsLearningRateWithProgress) {
  at::manual_seed(2);
  Ppo ppo(small_config());
  nn::ActorCritic model = ppo.model();
  const Metrics metrics = ppo.update(synthetic_rollout(model, 8, 2), /*progress=*/0.5);
  EXPECT_DOUBLE_EQ(metrics.at("charts/learning_rate"), 1.25e-4);

  PpoConfig constant = small_config();
  constant.anneal_lr = false;
  Ppo fixed(constant);
  nn::ActorCritic fixed_model = fixed.model();
  EXPECT_DOUBLE_EQ(fixed.update(synthetic_rollout(fixed_model, 8, 2), 0.5).at("charts/learning_rate"), 2.5e-4);
}

// One update at `progress` of a PPO built from `annealed` and of one built from `scaled`, from the
// same initial parameters, the same rollout and the same shuffles.
struct TwinUpdates {
  Metrics annealed;
  Metrics scaled;
  std::vector<at::Tensor> annealed_parameters;
  std::vector<at::Tensor> scaled_parameters;
};

TwinUpdates update_twins(const PpoConfig& annealed_config, const PpoConfig& scaled_config, double progress) {
  at::manual_seed(5);
  Ppo annealed(annealed_config);
  at::manual_seed(5);
  Ppo scaled(scaled_config);
  nn::ActorCritic annealed_model = annealed.model();
  nn::ActorCritic scaled_model = scaled.model();
  at::manual_seed(6);
  const Rollout rollout = synthetic_rollout(annealed_model, 8, 2);

  TwinUpdates twins;
  at::manual_seed(7);
  twins.annealed = annealed.update(rollout, progress);
  at::manual_seed(7);
  twins.scaled = scaled.update(rollout, progress);
  twins.annealed_parameters = annealed_model->parameters();
  twins.scaled_parameters = scaled_model->parameters();
  return twins;
}

void expect_same_parameters(const TwinUpdates& twins) {
  ASSERT_EQ(twins.annealed_parameters.size(), twins.scaled_parameters.size());
  for (size_t i = 0; i < twins.annealed_parameters.size(); ++i) {
    EXPECT_TRUE(twins.annealed_parameters[i].equal(twins.scaled_parameters[i])) << "parameter " << i;
  }
}

// RL Zoo's lin_0.2 clip range: at progress 0.5 the update is, bit for bit, the update of a PPO
// whose clip_coef is 0.1 from the start.
TEST(PpoTest, AnnealedClipIsTheCoefficientScaledByTheProgressLeft) {
  PpoConfig annealed_config = small_config();
  annealed_config.anneal_clip = true;
  PpoConfig halved_config = small_config();
  halved_config.clip_coef = 0.1;
  const TwinUpdates twins = update_twins(annealed_config, halved_config, /*progress=*/0.5);

  EXPECT_DOUBLE_EQ(twins.annealed.at("charts/clip_coef"), 0.1);
  EXPECT_DOUBLE_EQ(twins.scaled.at("charts/clip_coef"), 0.1);
  EXPECT_EQ(twins.annealed.at("losses/clipfrac"), twins.scaled.at("losses/clipfrac"));
  expect_same_parameters(twins);
  // Not annealed, the coefficient stays where it was set.
  EXPECT_DOUBLE_EQ(update_twins(annealed_config, halved_config, /*progress=*/0.9).scaled.at("charts/clip_coef"), 0.1);
}

// An annealed entropy bonus at progress 0.75 is, bit for bit, the update of a PPO whose ent_coef
// is a quarter of it from the start.
TEST(PpoTest, AnnealedEntropyBonusIsTheCoefficientScaledByTheProgressLeft) {
  PpoConfig annealed_config = small_config();
  annealed_config.ent_coef = 0.04;
  annealed_config.anneal_ent = true;
  PpoConfig quartered_config = small_config();
  quartered_config.ent_coef = 0.01;
  const TwinUpdates twins = update_twins(annealed_config, quartered_config, /*progress=*/0.75);

  EXPECT_DOUBLE_EQ(twins.annealed.at("charts/ent_coef"), 0.01);
  EXPECT_DOUBLE_EQ(twins.scaled.at("charts/ent_coef"), 0.01);
  expect_same_parameters(twins);
  // At the end of training the bonus is gone.
  EXPECT_DOUBLE_EQ(update_twins(annealed_config, quartered_config, /*progress=*/1.0).annealed.at("charts/ent_coef"),
                   0.0);
}

TEST(PpoTest, TinyTargetKlStopsAfterTheFirstEpoch) {
  at::manual_seed(3);
  PpoConfig config = small_config();
  config.target_kl = 1e-12;
  Ppo ppo(config);
  nn::ActorCritic model = ppo.model();
  const Metrics metrics = ppo.update(synthetic_rollout(model, 8, 2), 0.0);
  EXPECT_DOUBLE_EQ(metrics.at("charts/update_epochs"), 1.0);
  EXPECT_GT(metrics.at("losses/approx_kl"), 1e-12);
}

// A rollout whose log-probabilities are the model's own on the whole batch: the proximal policy
// of the decoupled objective, computed as Ppo::update computes it.
Rollout rollout_of_the_starting_policy(nn::ActorCritic& model, double log_prob_shift) {
  Rollout rollout = synthetic_rollout(model, 8, 2);
  c10::NoGradGuard no_grad;
  const at::Tensor proximal =
      model->evaluate(rollout.observations.flatten(0, 1), rollout.actions.flatten(0, 1)).log_prob;
  rollout.log_probs = (proximal + log_prob_shift).reshape({8, 2});
  return rollout;
}

// With the behaviour policy equal to the policy the update starts from, the weights are 1 and the
// clip is against the same log-probabilities: the decoupled update is PPO's, bit for bit.
TEST(PpoTest, DecoupledIsPpoWhenTheBehaviourPolicyIsTheProximalOne) {
  const auto update = [](bool decoupled) {
    PpoConfig config = small_config();
    config.decoupled = decoupled;
    at::manual_seed(6);
    Ppo ppo(config);
    nn::ActorCritic model = ppo.model();
    const Rollout rollout = rollout_of_the_starting_policy(model, 0.0);
    at::manual_seed(7);  // the same minibatches
    ppo.update(rollout, 0.0);
    return parameter_copies(model);
  };
  const std::vector<at::Tensor> ppo = update(false);
  const std::vector<at::Tensor> decoupled = update(true);
  for (size_t i = 0; i < ppo.size(); ++i) EXPECT_TRUE(ppo[i].equal(decoupled[i])) << "parameter " << i;
}

// Acted by a policy with half the probability of every action (log-probabilities lower by log 2),
// each sample weighs pi_proximal / pi_behaviour = 2, and the ratio is still clipped against the
// proximal policy: the policy loss is twice PPO's on the proximal log-probabilities.
TEST(PpoTest, DecoupledWeightsEverySampleByProximalOverBehaviour) {
  const auto policy_loss = [](bool decoupled, double shift) {
    PpoConfig config = small_config();
    config.decoupled = decoupled;
    config.update_epochs = 1;
    config.num_minibatches = 1;
    config.norm_adv = false;
    at::manual_seed(8);
    Ppo ppo(config);
    nn::ActorCritic model = ppo.model();
    const Rollout rollout = rollout_of_the_starting_policy(model, shift);
    return ppo.update(rollout, 0.0).at("losses/policy_loss");
  };
  const double ppo = policy_loss(false, 0.0);
  ASSERT_GT(std::abs(ppo), 1e-3);
  EXPECT_NEAR(policy_loss(true, -std::log(2.0)), 2.0 * ppo, 1e-5 * std::abs(ppo));
}

TEST(PpoTest, ContinuousActions) {
  at::manual_seed(4);
  PpoConfig config = small_config();
  config.network.action_kind = nn::ActionKind::kContinuous;
  config.network.action_dim = 3;
  Ppo ppo(config);
  nn::ActorCritic model = ppo.model();
  const Metrics metrics = ppo.update(synthetic_rollout(model, 8, 2), 0.0);
  EXPECT_TRUE(std::isfinite(metrics.at("losses/policy_loss")));
  EXPECT_TRUE(std::isfinite(metrics.at("losses/approx_kl")));
}

TEST(PpoTest, RejectsBadRolloutsAndProgress) {
  at::manual_seed(5);
  Ppo ppo(small_config());
  nn::ActorCritic model = ppo.model();
  EXPECT_THROW(ppo.update(synthetic_rollout(model, 7, 2), 0.0), std::invalid_argument);
  // 8 x 1 = 8 samples fill 4 minibatches of 2; 4 x 1 would not, but T must be 8 anyway.
  EXPECT_NO_THROW(ppo.update(synthetic_rollout(model, 8, 1), 0.0));
  EXPECT_THROW(ppo.update(synthetic_rollout(model, 8, 2), 1.5), std::invalid_argument);
  EXPECT_THROW(ppo.update(synthetic_rollout(model, 8, 2), -0.1), std::invalid_argument);
}

TEST(PpoCheckpointTest, SaveLoadRestoresParametersAndOptimiserState) {
  at::manual_seed(6);
  Ppo original(small_config());
  nn::ActorCritic original_model = original.model();
  const Rollout first = synthetic_rollout(original_model, 8, 2);
  original.update(first, 0.0);

  core::Checkpoint checkpoint;
  original.save(checkpoint);
  EXPECT_EQ(checkpoint.metadata["algorithm"], "ppo");
  EXPECT_EQ(checkpoint.metadata["updates"], 1);
  EXPECT_EQ(checkpoint.tensors.at("optimizer").scalar_type(), at::kByte);
  EXPECT_EQ(checkpoint.tensors.count("model/actor_head.weight"), 1u);

  at::manual_seed(99);  // a differently initialised learner
  Ppo restored(small_config());
  nn::ActorCritic restored_model = restored.model();
  EXPECT_FALSE(same_parameters(original_model, restored_model));
  restored.load(checkpoint);
  EXPECT_TRUE(same_parameters(original_model, restored_model));
  EXPECT_EQ(restored.updates(), 1);

  // The same next update from both: equal only if Adam's moments and step counts were restored.
  const Rollout second = synthetic_rollout(original_model, 8, 2);
  at::manual_seed(7);
  original.update(second, 0.5);
  at::manual_seed(7);
  restored.update(second, 0.5);
  EXPECT_TRUE(same_parameters(original_model, restored_model));

  // A learner whose optimiser never stepped would diverge.
  at::manual_seed(99);
  Ppo fresh(small_config());
  nn::ActorCritic fresh_model = fresh.model();
  core::Checkpoint parameters_only;
  original.save(parameters_only);
  Ppo blank(small_config());
  core::Checkpoint blank_checkpoint;
  blank.save(blank_checkpoint);
  parameters_only.tensors["optimizer"] = blank_checkpoint.tensors.at("optimizer");
  fresh.load(parameters_only);
  at::manual_seed(8);
  original.update(second, 0.5);
  at::manual_seed(8);
  fresh.update(second, 0.5);
  EXPECT_FALSE(same_parameters(original_model, fresh_model));
}

TEST(PpoCheckpointTest, LoadNamesWhatIsMissingOrMismatched) {
  at::manual_seed(9);
  Ppo ppo(small_config());
  core::Checkpoint good;
  ppo.save(good);
  Ppo other(small_config());
  nn::ActorCritic other_model = other.model();
  const std::vector<at::Tensor> before = parameter_copies(other_model);

  const auto expect_error = [&](const core::Checkpoint& checkpoint, core::CheckpointError::Kind kind,
                                const std::string& needle) {
    try {
      other.load(checkpoint);
      ADD_FAILURE() << "expected a CheckpointError mentioning " << needle;
    } catch (const core::CheckpointError& error) {
      EXPECT_EQ(error.kind(), kind) << error.what();
      EXPECT_NE(std::string(error.what()).find(needle), std::string::npos) << error.what();
    }
  };

  core::Checkpoint missing = good;
  missing.tensors.erase("model/critic_head.bias");
  expect_error(missing, core::CheckpointError::Kind::kTensorMissing, "model/critic_head.bias");

  core::Checkpoint misshapen = good;
  misshapen.tensors["model/actor_head.weight"] = at::zeros({3, 64});
  expect_error(misshapen, core::CheckpointError::Kind::kCorrupt, "model/actor_head.weight");

  core::Checkpoint extra = good;
  extra.tensors["model/bonus.weight"] = at::zeros({1});
  expect_error(extra, core::CheckpointError::Kind::kCorrupt, "model/bonus.weight");

  core::Checkpoint no_optimizer = good;
  no_optimizer.tensors.erase("optimizer");
  expect_error(no_optimizer, core::CheckpointError::Kind::kTensorMissing, "optimizer");

  core::Checkpoint garbage = good;
  garbage.tensors["optimizer"] = at::ones({16}, at::kByte);
  expect_error(garbage, core::CheckpointError::Kind::kCorrupt, "optimizer");

  core::Checkpoint wrong_algorithm = good;
  wrong_algorithm.metadata["algorithm"] = "a2c";
  expect_error(wrong_algorithm, core::CheckpointError::Kind::kCorrupt, "a2c");

  // Nothing was changed by the failed loads.
  const std::vector<at::Tensor> after = other_model->parameters();
  for (size_t i = 0; i < before.size(); ++i) EXPECT_TRUE(before[i].equal(after[i]));
}

// small_config() with observation normalisation, one epoch of one minibatch: every sample of the
// rollout is evaluated once, in the first and only minibatch.
PpoConfig one_minibatch_config(bool normalize_observations) {
  PpoConfig config = small_config();
  config.network.normalize_observations = normalize_observations;
  config.update_epochs = 1;
  config.num_minibatches = 1;
  return config;
}

// A policy sensitive to its inputs: the actor head's CleanRL gain of 0.01 makes the initial
// policy nearly uniform whatever the observations; 100 times that makes it depend on them.
void sharpen_policy(nn::ActorCritic& model) {
  c10::NoGradGuard no_grad;
  model->named_parameters()["actor_head.weight"].mul_(100.0);
}

// Observations with mean 3 and std 5: their statistics differ from the initial (0, 1).
Rollout offset_rollout(nn::ActorCritic& model) {
  return test_util::random_rollout(model, 8, 4, /*terminated_at=*/2, /*truncated_at=*/4, /*obs_scale=*/5.0,
                                   /*obs_shift=*/3.0);
}

TEST(PpoNormalizationTest, ObservationStatisticsMoveAfterTheEpochsSoTheFirstRatioIsOne) {
  at::manual_seed(21);
  Ppo ppo(one_minibatch_config(/*normalize_observations=*/true));
  nn::ActorCritic model = ppo.model();
  sharpen_policy(model);
  const Rollout rollout = offset_rollout(model);
  const Metrics metrics = ppo.update(rollout, 0.0);
  // The only minibatch is evaluated with the statistics the rollout was acted on: ratio 1.
  EXPECT_LT(std::abs(metrics.at("losses/approx_kl")), 1e-6);
  EXPECT_LT(std::abs(metrics.at("losses/old_approx_kl")), 1e-6);
  // Then the rollout's raw observations joined the statistics (Gymnasium's prior count 1e-4).
  const nn::RunningMeanStd stats = model->observation_stats();
  EXPECT_NEAR(stats->count(), 32 + 1e-4, 1e-9);
  const at::Tensor observed_mean = rollout.observations.flatten(0, 1).to(at::kDouble).mean(0);
  EXPECT_TRUE(stats->mean().allclose(observed_mean * (32 / (32 + 1e-4)), 0.0, 1e-9));

  // Had the statistics moved first, the same update would start off-policy.
  at::manual_seed(21);
  Ppo early(one_minibatch_config(true));
  nn::ActorCritic early_model = early.model();
  sharpen_policy(early_model);
  const Rollout same = offset_rollout(early_model);
  early_model->update_observation_stats(same.observations.flatten(0, 1));
  EXPECT_GT(early.update(same, 0.0).at("losses/approx_kl"), 1e-3);
}

// Scaling inside update() is the same as handing PPO rewards scaled by RewardScaler beforehand.
TEST(PpoNormalizationTest, RewardScalingHappensBeforeGae) {
  PpoConfig scaled_config = small_config();
  scaled_config.normalize_reward = true;
  at::manual_seed(22);
  Ppo scaled(scaled_config);
  at::manual_seed(22);
  Ppo plain(small_config());
  nn::ActorCritic scaled_model = scaled.model();
  nn::ActorCritic plain_model = plain.model();
  ASSERT_TRUE(same_parameters(scaled_model, plain_model));

  RewardScaler by_hand(RewardScalerConfig{small_config().gamma});
  for (int update = 0; update < 2; ++update) {
    const Rollout rollout = synthetic_rollout(scaled_model, 8, 2);
    Rollout prescaled = rollout;
    prescaled.rewards = by_hand.scale(rollout.rewards * 50.0, rollout.terminated, rollout.truncated);
    Rollout raw = rollout;
    raw.rewards = rollout.rewards * 50.0;
    at::manual_seed(23 + update);
    const Metrics scaled_metrics = scaled.update(raw, 0.0);
    at::manual_seed(23 + update);
    const Metrics plain_metrics = plain.update(prescaled, 0.0);
    EXPECT_TRUE(same_parameters(scaled_model, plain_model)) << "update " << update;
    EXPECT_DOUBLE_EQ(scaled_metrics.at("losses/value_loss"), plain_metrics.at("losses/value_loss"));
  }
}

// A learner with both normalisations, after two updates, and what its checkpoint holds.
struct NormalisedPpo {
  static PpoConfig config() {
    PpoConfig config = small_config();
    config.network.normalize_observations = true;
    config.normalize_reward = true;
    return config;
  }
  Ppo ppo{config()};
  nn::ActorCritic model = ppo.model();
  NormalisedPpo() {
    for (int i = 0; i < 2; ++i) ppo.update(offset_rollout(model), 0.0);
  }
};

TEST(PpoNormalizationTest, CheckpointCarriesTheStatisticsAndActingUsesThem) {
  at::manual_seed(24);
  NormalisedPpo original;
  core::Checkpoint checkpoint;
  original.ppo.save(checkpoint);
  for (const char* name :
       {"model/obs_rms.mean", "model/obs_rms.var", "model/obs_rms.count", "reward_scaler/returns",
        "reward_scaler/return_rms.mean", "reward_scaler/return_rms.var", "reward_scaler/return_rms.count"}) {
    EXPECT_EQ(checkpoint.tensors.count(name), 1u) << name;
  }
  EXPECT_DOUBLE_EQ(checkpoint.tensors.at("model/obs_rms.count").item<double>(), 64 + 1e-4);

  at::manual_seed(99);
  Ppo restored(NormalisedPpo::config());
  nn::ActorCritic restored_model = restored.model();
  restored.load(checkpoint);
  EXPECT_TRUE(restored_model->observation_stats()->mean().equal(original.model->observation_stats()->mean()));
  EXPECT_TRUE(restored_model->observation_stats()->var().equal(original.model->observation_stats()->var()));
  EXPECT_DOUBLE_EQ(restored_model->observation_stats()->count(), 64 + 1e-4);

  // What `concord eval` does with a loaded learner: act deterministically on raw observations.
  // The restored model acts as the original; the same parameters without the statistics do not.
  const at::Tensor raw = at::randn({16, 4}) * 5.0 + 3.0;
  {
    c10::NoGradGuard no_grad;
    EXPECT_TRUE(restored_model->act(raw, true).action.equal(original.model->act(raw, true).action));
    EXPECT_TRUE(restored_model->value(raw).equal(original.model->value(raw)));
    core::Checkpoint fresh_statistics = checkpoint;
    Ppo blank(NormalisedPpo::config());
    core::Checkpoint blank_checkpoint;
    blank.save(blank_checkpoint);
    for (const char* name : {"model/obs_rms.mean", "model/obs_rms.var", "model/obs_rms.count"}) {
      fresh_statistics.tensors[name] = blank_checkpoint.tensors.at(name);
    }
    Ppo without(NormalisedPpo::config());
    without.load(fresh_statistics);
    EXPECT_FALSE(without.model()->value(raw).allclose(original.model->value(raw), 1e-3, 1e-3));
  }

  // The same next update from both: the reward scaler's accumulators and statistics came along.
  const Rollout next = offset_rollout(original.model);
  at::manual_seed(25);
  original.ppo.update(next, 0.5);
  at::manual_seed(25);
  restored.update(next, 0.5);
  EXPECT_TRUE(same_parameters(original.model, restored_model));
  EXPECT_TRUE(restored_model->observation_stats()->mean().equal(original.model->observation_stats()->mean()));
}

TEST(PpoNormalizationTest, CheckpointsWithoutNormalisationStayAsTheyWere) {
  at::manual_seed(26);
  Ppo plain(small_config());
  core::Checkpoint old_style;
  plain.save(old_style);
  // Parameters and the optimiser only: what checkpoints held before normalisation existed.
  for (const auto& entry : old_style.tensors) {
    EXPECT_TRUE(entry.first == "optimizer" || entry.first.rfind("model/", 0) == 0) << entry.first;
    EXPECT_EQ(entry.first.find("obs_rms"), std::string::npos) << entry.first;
  }
  Ppo other(small_config());
  EXPECT_NO_THROW(other.load(old_style));

  const auto expect_error = [](Ppo& learner, const core::Checkpoint& checkpoint, core::CheckpointError::Kind kind,
                               const std::string& needle) {
    try {
      learner.load(checkpoint);
      ADD_FAILURE() << "expected a CheckpointError mentioning " << needle;
    } catch (const core::CheckpointError& error) {
      EXPECT_EQ(error.kind(), kind) << error.what();
      EXPECT_THAT(error.what(), ::testing::HasSubstr(needle));
    }
  };
  // Normalising learners need the statistics an old checkpoint lacks ...
  Ppo normalising(NormalisedPpo::config());
  expect_error(normalising, old_style, core::CheckpointError::Kind::kTensorMissing, "model/obs_rms.");
  // ... and a learner that does not normalise refuses statistics it would ignore.
  at::manual_seed(27);
  NormalisedPpo normalised;
  core::Checkpoint with_statistics;
  normalised.ppo.save(with_statistics);
  expect_error(other, with_statistics, core::CheckpointError::Kind::kCorrupt, "model/obs_rms.");
  core::Checkpoint reward_state_only = old_style;
  for (const auto& entry : with_statistics.tensors) {
    if (entry.first.rfind("reward_scaler/", 0) == 0) reward_state_only.tensors.insert(entry);
  }
  expect_error(other, reward_state_only, core::CheckpointError::Kind::kCorrupt, "algo.ppo.normalize_reward");
}

// A one-step bandit with a constant observation: action 1 pays 1, action 0 pays 0. PPO must
// make action 1 likely (p > 0.9) within a few dozen updates.
TEST(PpoLearning, SolvesATwoArmedBandit) {
  at::manual_seed(10);
  PpoConfig config = small_config();
  config.num_steps = 4;
  config.anneal_lr = false;
  Ppo ppo(config);
  nn::ActorCritic model = ppo.model();
  const int64_t steps = 4;
  const int64_t envs = 16;
  const at::Tensor obs = at::ones({steps, envs, 4});

  const auto p_action_1 = [&]() {
    c10::NoGradGuard no_grad;
    return model->forward(obs[0][0].unsqueeze(0)).logits.softmax(-1)[0][1].item<double>();
  };
  EXPECT_NEAR(p_action_1(), 0.5, 0.05);
  int updates = 0;
  for (; updates < 60 && p_action_1() <= 0.9; ++updates) {
    Rollout rollout;
    {
      c10::NoGradGuard no_grad;
      const nn::ActResult act = model->act(obs.flatten(0, 1));
      rollout.observations = obs;
      rollout.actions = act.action.reshape({steps, envs});
      rollout.log_probs = act.log_prob.reshape({steps, envs});
      rollout.values = act.value.reshape({steps, envs});
      rollout.rewards = rollout.actions.to(at::kFloat);
      rollout.terminated = at::ones({steps, envs});
      rollout.truncated = at::zeros({steps, envs});
      rollout.bootstrap_value = model->value(obs[0]);
    }
    ppo.update(rollout, 0.0);
  }
  RecordProperty("updates", updates);
  EXPECT_GT(p_action_1(), 0.9) << "after " << updates << " updates";
}

}  // namespace
}  // namespace concord::algos
