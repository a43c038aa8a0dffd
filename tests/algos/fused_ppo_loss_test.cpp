// fused_ppo_loss against ppo_loss, the same loss composed of autograd operations: the loss, its
// detached terms and the gradients it sends back, on batches that reach every branch (ratios
// inside and outside the clip range on both sides of 1, advantages of both signs, value errors
// inside and outside the value clip); then one whole PPO update against the unfused update loop.
#include "concord/algos/fused_ppo_loss.h"

#include <ATen/ops/randperm.h>
#include <gtest/gtest.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/torch.h>

#include "concord/algos/gae.h"
#include "concord/algos/ppo.h"

namespace concord::algos {
namespace {

struct Inputs {
  at::Tensor new_log_probs, old_log_probs, advantages, new_values, old_values, returns, entropy;
};

Inputs random_inputs(int64_t n, uint64_t seed) {
  torch::manual_seed(seed);
  Inputs in;
  in.old_log_probs = -torch::rand({n}) * 2.0 - 0.1;
  // log ratios in [-0.6, 0.6]: ratios from 0.55 to 1.8, most outside [0.8, 1.2].
  in.new_log_probs = (in.old_log_probs + (torch::rand({n}) - 0.5) * 1.2).requires_grad_();
  in.advantages = torch::randn({n});
  in.old_values = torch::randn({n});
  in.new_values = (in.old_values + torch::randn({n}) * 0.4).requires_grad_();
  in.returns = torch::randn({n});
  in.entropy = (torch::rand({n}) + 0.2).requires_grad_();
  return in;
}

struct Result {
  PpoLoss loss;
  at::Tensor d_log_probs, d_values, d_entropy;
};

template <typename LossFn>
Result run(LossFn loss_fn, const Inputs& in, bool clip_vloss) {
  Result out;
  out.loss = loss_fn(in.new_log_probs, in.old_log_probs, in.advantages, in.new_values, in.old_values, in.returns,
                     in.entropy, 0.2, clip_vloss, 0.01, 0.5);
  const auto grads = torch::autograd::grad({out.loss.loss}, {in.new_log_probs, in.new_values, in.entropy});
  out.d_log_probs = grads[0];
  out.d_values = grads[1];
  out.d_entropy = grads[2];
  return out;
}

void expect_close(const at::Tensor& fused, const at::Tensor& reference, const char* what) {
  EXPECT_TRUE(torch::allclose(fused, reference, /*rtol=*/1e-6, /*atol=*/1e-7))
      << what << ": max difference " << (fused - reference).abs().max().item<double>();
}

TEST(FusedPpoLoss, MatchesTheComposedLossAndItsGradients) {
  for (bool clip_vloss : {true, false}) {
    for (uint64_t seed : {1, 2, 3}) {
      const Inputs in = random_inputs(257, seed);
      const Result fused = run(fused_ppo_loss, in, clip_vloss);
      const Result reference = run(ppo_loss, in, clip_vloss);
      SCOPED_TRACE("clip_vloss " + std::to_string(clip_vloss) + ", seed " + std::to_string(seed));
      expect_close(fused.loss.loss, reference.loss.loss, "loss");
      expect_close(fused.loss.policy_loss, reference.loss.policy_loss, "policy_loss");
      expect_close(fused.loss.value_loss, reference.loss.value_loss, "value_loss");
      expect_close(fused.loss.entropy, reference.loss.entropy, "entropy");
      expect_close(fused.loss.approx_kl, reference.loss.approx_kl, "approx_kl");
      expect_close(fused.loss.old_approx_kl, reference.loss.old_approx_kl, "old_approx_kl");
      expect_close(fused.loss.clipfrac, reference.loss.clipfrac, "clipfrac");
      expect_close(fused.d_log_probs, reference.d_log_probs, "d loss / d new_log_probs");
      expect_close(fused.d_values, reference.d_values, "d loss / d new_values");
      expect_close(fused.d_entropy, reference.d_entropy, "d loss / d entropy");
      // The batch reaches every branch: clipped and unclipped ratios, gradients that vanish.
      EXPECT_GT(reference.loss.clipfrac.item<double>(), 0.3);
      EXPECT_GT((reference.d_log_probs == 0).sum().item<int64_t>(), 10);
      EXPECT_GT((reference.d_log_probs != 0).sum().item<int64_t>(), 10);
      if (clip_vloss) {
        EXPECT_GT((reference.d_values == 0).sum().item<int64_t>(), 10);
      }
    }
  }
}

TEST(FusedPpoLoss, RatioOneTiesSplitAsLibTorchSplitsThem) {
  // At the first minibatch of an update every ratio is exactly 1, inside the clip range: both
  // surrogate sides tie, and the gradient is -A / N all the same.
  Inputs in = random_inputs(8, 4);
  in.new_log_probs = in.old_log_probs.clone().requires_grad_();
  in.new_values = in.old_values.clone().requires_grad_();
  const Result fused = run(fused_ppo_loss, in, true);
  const Result reference = run(ppo_loss, in, true);
  expect_close(fused.d_log_probs, reference.d_log_probs, "d loss / d new_log_probs");
  expect_close(fused.d_log_probs, -in.advantages / 8.0, "-A / N");
  expect_close(fused.d_values, reference.d_values, "d loss / d new_values");
}

TEST(FusedPpoLoss, RefusesMismatchedShapes) {
  const Inputs in = random_inputs(4, 5);
  EXPECT_THROW(fused_ppo_loss(in.new_log_probs, in.old_log_probs.narrow(0, 0, 3), in.advantages, in.new_values,
                              in.old_values, in.returns, in.entropy, 0.2, true, 0.0, 0.5),
               std::invalid_argument);
}

// One update of Ppo (fused loss) against the update loop written out with ppo_loss, from the
// same initial network, batch and minibatch permutations.
TEST(FusedPpoLoss, OneUpdateMatchesTheUnfusedPath) {
  PpoConfig config;
  config.network.obs_shape = {4};
  config.network.action_dim = 2;
  config.anneal_lr = false;
  torch::manual_seed(11);
  Ppo fused(config);
  torch::manual_seed(11);
  Ppo unfused(config);
  ASSERT_TRUE(torch::equal(fused.flat_parameters().values(), unfused.flat_parameters().values()));

  torch::manual_seed(12);
  const int64_t steps = config.num_steps, envs = 4, n = steps * envs;
  Rollout rollout;
  rollout.observations = torch::randn({steps, envs, 4});
  rollout.actions = torch::randint(0, 2, {steps, envs}, torch::kLong);
  rollout.rewards = torch::ones({steps, envs});
  rollout.terminated = (torch::rand({steps, envs}) < 0.05).to(torch::kFloat);
  rollout.truncated = torch::zeros({steps, envs});
  rollout.final_observations = torch::zeros_like(rollout.observations);
  {
    torch::NoGradGuard no_grad;
    const nn::ActionEvaluation acted =
        fused.model()->evaluate(rollout.observations.flatten(0, 1), rollout.actions.flatten(0, 1));
    // Behaviour log-probabilities a little off the current policy's, so that ratios clip.
    rollout.log_probs = (acted.log_prob + torch::randn({n}) * 0.3).reshape({steps, envs});
    rollout.values = acted.value.reshape({steps, envs});
    rollout.bootstrap_value = torch::randn({envs});
  }

  torch::manual_seed(13);
  fused.update(rollout, 0.0);

  torch::manual_seed(13);
  auto& parameters = unfused.flat_parameters();
  torch::optim::Adam adam({parameters.values()}, torch::optim::AdamOptions(config.learning_rate).eps(config.adam_eps));
  const GaeResult g = gae(rollout.rewards, rollout.values, rollout.terminated, rollout.truncated,
                          rollout.bootstrap_value, torch::zeros({steps, envs}), config.gamma, config.gae_lambda);
  const at::Tensor obs = rollout.observations.flatten(0, 1), actions = rollout.actions.flatten(0, 1);
  const at::Tensor log_probs = rollout.log_probs.reshape(-1), values = rollout.values.reshape(-1);
  const at::Tensor advantages = g.advantages.reshape(-1), returns = g.returns.reshape(-1);
  for (int64_t epoch = 0; epoch < config.update_epochs; ++epoch) {
    const at::Tensor order = at::randperm(n, at::kLong);
    for (const at::Tensor& mb : order.tensor_split(config.num_minibatches)) {
      const nn::ActionEvaluation eval = unfused.model()->evaluate(obs.index_select(0, mb), actions.index_select(0, mb));
      at::Tensor mb_adv = advantages.index_select(0, mb);
      mb_adv = (mb_adv - mb_adv.mean()) / (mb_adv.std() + 1e-8);
      const PpoLoss loss = ppo_loss(eval.log_prob, log_probs.index_select(0, mb), mb_adv, eval.value,
                                    values.index_select(0, mb), returns.index_select(0, mb), eval.entropy,
                                    config.clip_coef, config.clip_vloss, config.ent_coef, config.vf_coef);
      parameters.zero_grad();
      loss.loss.backward();
      torch::nn::utils::clip_grad_norm_(parameters.values(), config.max_grad_norm);
      adam.step();
    }
  }
  const at::Tensor difference = (fused.flat_parameters().values() - parameters.values()).abs().max();
  EXPECT_LT(difference.item<double>(), 1e-6);
  // The update moved the parameters far more than that.
  torch::manual_seed(11);
  Ppo initial(config);
  EXPECT_GT((initial.flat_parameters().values() - parameters.values()).abs().max().item<double>(), 1e-3);
}

}  // namespace
}  // namespace concord::algos
