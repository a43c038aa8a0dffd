#include "concord/algos/ppo.h"

#include <ATen/ops/randperm.h>
#include <c10/core/GradMode.h>

#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "concord/algos/fused_ppo_loss.h"
#include "concord/algos/gae.h"
#include "concord/algos/statistics.h"
#include "concord/algos/tensor_checks.h"
#include "concord/core/config_problems.h"
#include "concord/core/torch_thread.h"

namespace concord::algos {
namespace {

constexpr const char* kAlgorithm = "ppo";
constexpr const char* kLossFn = "ppo_loss";

torch::optim::AdamOptions adam_options(const PpoConfig& config) {
  return torch::optim::AdamOptions(config.learning_rate).eps(config.adam_eps);
}

}  // namespace

const core::ConfigFields<PpoConfig>& PpoConfig::fields() {
  static const core::ConfigFields<PpoConfig> kFields = {
      {"learning_rate", &PpoConfig::learning_rate, "Adam step size (the initial one when annealed)"},
      {"num_steps", &PpoConfig::num_steps, "Steps of each environment per rollout (T)"},
      {"anneal_lr", &PpoConfig::anneal_lr, "Decay the learning rate linearly to 0 over training"},
      {"gamma", &PpoConfig::gamma, "Discount factor"},
      {"gae_lambda", &PpoConfig::gae_lambda, "GAE lambda"},
      {"num_minibatches", &PpoConfig::num_minibatches, "Minibatches per epoch"},
      {"update_epochs", &PpoConfig::update_epochs, "Passes over each rollout"},
      {"norm_adv", &PpoConfig::norm_adv, "Normalise advantages within each minibatch"},
      {"clip_coef", &PpoConfig::clip_coef,
       "Surrogate (and value) clipping coefficient (the initial one when annealed)"},
      {"anneal_clip", &PpoConfig::anneal_clip, "Decay the clipping coefficient linearly to 0 over training"},
      {"clip_vloss", &PpoConfig::clip_vloss, "Clip the value loss around the rollout's values"},
      {"ent_coef", &PpoConfig::ent_coef, "Entropy bonus coefficient (the initial one when annealed)"},
      {"anneal_ent", &PpoConfig::anneal_ent, "Decay the entropy bonus coefficient linearly to 0 over training"},
      {"vf_coef", &PpoConfig::vf_coef, "Value loss coefficient"},
      {"max_grad_norm", &PpoConfig::max_grad_norm, "Gradient-norm clipping threshold"},
      {"target_kl", &PpoConfig::target_kl, "Stop an update's epochs once approx_kl exceeds this (0 = off)"},
      {"optimizer_eps", &PpoConfig::adam_eps, "Adam epsilon", "adam_eps"},
      {"normalize_reward", &PpoConfig::normalize_reward,
       "Scale rewards by the running std of the discounted return, clipped to +-10 (Gymnasium's NormalizeReward)"},
      {"decoupled", &PpoConfig::decoupled,
       "Clip against the policy each update starts from and weight by its ratio to the behaviour policy (Hilton "
       "et al. 2021), for lagged rollouts"},
  };
  return kFields;
}

void PpoConfig::validate() const {
  core::ConfigProblems problems;
  problems.check(learning_rate > 0.0, "learning_rate", learning_rate, "> 0");
  problems.check(num_steps >= 1, "num_steps", num_steps, ">= 1");
  problems.check(gamma >= 0.0 && gamma <= 1.0, "gamma", gamma, "in [0, 1]");
  problems.check(gae_lambda >= 0.0 && gae_lambda <= 1.0, "gae_lambda", gae_lambda, "in [0, 1]");
  problems.check(num_minibatches >= 1, "num_minibatches", num_minibatches, ">= 1");
  problems.check(update_epochs >= 1, "update_epochs", update_epochs, ">= 1");
  problems.check(clip_coef > 0.0, "clip_coef", clip_coef, "> 0");
  problems.check(ent_coef >= 0.0, "ent_coef", ent_coef, ">= 0");
  problems.check(vf_coef >= 0.0, "vf_coef", vf_coef, ">= 0");
  problems.check(max_grad_norm > 0.0, "max_grad_norm", max_grad_norm, "> 0");
  problems.check(target_kl >= 0.0, "target_kl", target_kl, ">= 0 (0 = off)");
  problems.check(adam_eps > 0.0, "optimizer_eps", adam_eps, "> 0");
  problems.throw_if_any("PpoConfig");
}

void check_ppo_loss_inputs(const char* fn, const at::Tensor& new_log_probs, const at::Tensor& old_log_probs,
                           const at::Tensor& advantages, const at::Tensor& new_values, const at::Tensor& old_values,
                           const at::Tensor& returns, const at::Tensor& entropy) {
  const int64_t n = new_log_probs.defined() && new_log_probs.dim() == 1 ? new_log_probs.size(0) : -1;
  tensor_checks::check_1d(fn, "new_log_probs", new_log_probs, n);
  tensor_checks::check_1d(fn, "old_log_probs", old_log_probs, n);
  tensor_checks::check_1d(fn, "advantages", advantages, n);
  tensor_checks::check_1d(fn, "new_values", new_values, n);
  tensor_checks::check_1d(fn, "old_values", old_values, n);
  tensor_checks::check_1d(fn, "returns", returns, n);
  tensor_checks::check_1d(fn, "entropy", entropy, n);
}

PpoLoss ppo_loss(const at::Tensor& new_log_probs, const at::Tensor& old_log_probs, const at::Tensor& advantages,
                 const at::Tensor& new_values, const at::Tensor& old_values, const at::Tensor& returns,
                 const at::Tensor& entropy, double clip_coef, bool clip_vloss, double ent_coef, double vf_coef) {
  check_ppo_loss_inputs(kLossFn, new_log_probs, old_log_probs, advantages, new_values, old_values, returns, entropy);

  const at::Tensor logratio = new_log_probs - old_log_probs;
  const at::Tensor ratio = logratio.exp();

  // Policy loss: the pessimistic (max) of the unclipped and clipped surrogate losses.
  const at::Tensor pg_loss1 = -advantages * ratio;
  const at::Tensor pg_loss2 = -advantages * ratio.clamp(1.0 - clip_coef, 1.0 + clip_coef);
  const at::Tensor pg_loss = pg_loss1.maximum(pg_loss2).mean();

  // Value loss, clipped around the values the rollout was collected with.
  const at::Tensor v_loss_unclipped = (new_values - returns).square();
  at::Tensor v_loss;
  if (clip_vloss) {
    const at::Tensor v_clipped = old_values + (new_values - old_values).clamp(-clip_coef, clip_coef);
    const at::Tensor v_loss_clipped = (v_clipped - returns).square();
    v_loss = 0.5 * v_loss_unclipped.maximum(v_loss_clipped).mean();
  } else {
    v_loss = 0.5 * v_loss_unclipped.mean();
  }

  const at::Tensor entropy_loss = entropy.mean();
  PpoLoss out;
  out.loss = pg_loss - ent_coef * entropy_loss + vf_coef * v_loss;
  out.policy_loss = pg_loss.detach();
  out.value_loss = v_loss.detach();
  out.entropy = entropy_loss.detach();

  // Diagnostics: how far the policy moved (http://joschu.net/blog/kl-approx.html).
  c10::NoGradGuard no_grad;
  out.old_approx_kl = (-logratio).mean();
  out.approx_kl = ((ratio - 1.0) - logratio).mean();
  out.clipfrac = (ratio - 1.0).abs().gt(clip_coef).to(at::kFloat).mean();
  return out;
}

Ppo::Ppo(PpoConfig config, torch::Device device)
    : ActorCriticLearner(kAlgorithm, core::validated(config).network, device,
                         config.normalize_reward ? std::make_optional(config.gamma) : std::nullopt,
                         [adam = adam_options(config)](const nn::FlatParameters& parameters) {
                           return std::make_unique<torch::optim::Adam>(std::vector<at::Tensor>{parameters.values()},
                                                                       adam);
                         }),
      config_(std::move(config)) {}

Ppo::Ppo(Ppo& primary) : ActorCriticLearner(primary), config_(primary.config_) {}

std::unique_ptr<OnPolicyLearner> Ppo::make_shared_replica() { return std::unique_ptr<OnPolicyLearner>(new Ppo(*this)); }

Metrics Ppo::update(const Rollout& rollout, double progress) {
  const int64_t num_steps = rollout.num_steps();
  const int64_t batch_size = num_steps * rollout.num_envs();
  const int64_t min_batch = config_.num_minibatches * (config_.norm_adv ? 2 : 1);
  // With memory, a minibatch is whole env sequences (CleanRL's ppo_atari_lstm.py): every
  // minibatch needs an env of its own.
  const bool sequences = model()->recurrent();
  if (sequences && rollout.num_envs() < config_.num_minibatches) {
    throw std::invalid_argument(
        "Ppo::update: a network with memory learns from whole env sequences, so "
        "num_minibatches = " +
        std::to_string(config_.num_minibatches) +
        " needs at least as many envs; got B = " + std::to_string(rollout.num_envs()));
  }
  if (num_steps != config_.num_steps || batch_size < min_batch || !(progress >= 0.0 && progress <= 1.0)) {
    std::ostringstream out;
    out << "Ppo::update: need T = num_steps = " << config_.num_steps << ", T * B >= " << min_batch
        << " (num_minibatches = " << config_.num_minibatches
        << (config_.norm_adv ? ", 2 samples each for norm_adv" : "")
        << ") and progress in [0, 1]; got T = " << num_steps << ", B = " << rollout.num_envs()
        << ", progress = " << progress;
    throw std::invalid_argument(out.str());
  }
  // Annealing the rate if instructed to do so.
  const double lr = set_learning_rate(config_.learning_rate, config_.anneal_lr, progress);
  // Stable-Baselines3's linear clip_range schedule: the trust region closes as training ends.
  const double clip_coef = linear_schedule(config_.clip_coef, config_.anneal_clip, progress);
  // The entropy bonus fades the same way when asked: exploration early, the policy's mode at the end.
  const double ent_coef = linear_schedule(config_.ent_coef, config_.anneal_ent, progress);
  // The rollout on the model's device, rewards scaled by the running std of the discounted
  // return if asked; [T, B, ...] flattened to [T * B, ...] for the network.
  const Batch b = prepare(rollout);

  // Bootstrap value if not done: GAE, truncated episodes bootstrapping from truncation_values.
  const GaeResult gae_result = gae(b.rewards, b.values, b.terminated, b.truncated, b.bootstrap_value,
                                   b.truncation_values, config_.gamma, config_.gae_lambda);
  const at::Device device = b.rewards.device();
  const at::Tensor b_logprobs = b.log_probs.reshape(-1);
  const at::Tensor b_advantages = gae_result.advantages.reshape(-1);
  const at::Tensor b_returns = gae_result.returns.reshape(-1);
  const at::Tensor b_values = b.values.reshape(-1);
  // The policy the ratio is clipped against. PPO's is the behaviour policy, whose log-probabilities
  // the rollout carries. The decoupled objective's is the proximal policy, the parameters this
  // update starts from, and each sample's term is weighted by pi_proximal / pi_behaviour: for
  // rollouts acted by older parameters the clip then bounds how far this update moves the policy,
  // and the weight corrects for the lag.
  // With memory the network re-runs each env's sequence from the state the rollout started with
  // (minibatches are then sets of envs, and each sample's index is t * B + env).
  const int64_t num_envs = rollout.num_envs();
  const at::Tensor sequence_observations =
      sequences ? b.observations.unflatten(0, {num_steps, num_envs}) : at::Tensor();
  const at::Tensor sequence_actions = sequences ? b.actions.unflatten(0, {num_steps, num_envs}) : at::Tensor();
  const auto evaluate_envs = [&](const at::Tensor& envs) {
    core::TensorMap state;
    for (const auto& [name, tensor] : b.initial_state) state[name] = tensor.index_select(0, envs);
    return model()->evaluate_sequence(sequence_observations.index_select(1, envs),
                                      sequence_actions.index_select(1, envs), b.episode_starts.index_select(1, envs),
                                      state);
  };
  const at::Tensor all_envs = at::arange(num_envs, at::TensorOptions().dtype(at::kLong).device(b.rewards.device()));
  at::Tensor b_clip_logprobs = b_logprobs;
  at::Tensor b_weights;
  if (config_.decoupled) {
    c10::NoGradGuard no_grad;
    b_clip_logprobs =
        (sequences ? evaluate_envs(all_envs) : model()->evaluate(b.observations, b.actions)).log_prob.detach();
    b_weights = (b_clip_logprobs - b_logprobs).exp();
  }

  // Optimizing the policy and value network. The loss is ppo_loss as one autograd node
  // (fused_ppo_loss.h); diagnostics stay tensors until the update ends, so that no minibatch
  // waits on a read.
  PpoLoss last;
  at::Tensor clipfrac_sum = at::zeros({}, b.rewards.options());
  int64_t minibatches_run = 0;
  int64_t epochs_run = 0;
  for (int64_t epoch = 0; epoch < config_.update_epochs; ++epoch) {
    const at::Tensor b_inds =
        at::randperm(sequences ? num_envs : batch_size, core::thread_generator(at::kCPU), at::kLong).to(device);
    for (const at::Tensor& split : b_inds.tensor_split(config_.num_minibatches)) {
      // The samples of a minibatch of envs, in the order evaluate_sequence returns them.
      const at::Tensor mb_inds =
          sequences ? (at::arange(num_steps, split.options()).unsqueeze(1) * num_envs + split.unsqueeze(0)).flatten()
                    : split;
      const nn::ActionEvaluation eval =
          sequences ? evaluate_envs(split)
                    : model()->evaluate(b.observations.index_select(0, mb_inds), b.actions.index_select(0, mb_inds));

      at::Tensor mb_advantages = b_advantages.index_select(0, mb_inds);
      if (config_.norm_adv) {
        const auto [std, mean] = at::std_mean(mb_advantages);
        mb_advantages = (mb_advantages - mean).div_(std.add(1e-8));
      }
      // w * min(r A, clip(r) A) = min(r wA, clip(r) wA) for the weight w > 0.
      if (b_weights.defined()) mb_advantages = mb_advantages * b_weights.index_select(0, mb_inds);

      last = fused_ppo_loss(eval.log_prob, b_clip_logprobs.index_select(0, mb_inds), mb_advantages, eval.value,
                            b_values.index_select(0, mb_inds), b_returns.index_select(0, mb_inds), eval.entropy,
                            clip_coef, config_.clip_vloss, ent_coef, config_.vf_coef);

      step(last.loss, config_.max_grad_norm);

      clipfrac_sum.add_(last.clipfrac);
      ++minibatches_run;
    }
    ++epochs_run;

    // Early stopping once the policy has moved too far from the one that collected the data.
    if (config_.target_kl > 0.0 && last.approx_kl.item<double>() > config_.target_kl) break;
  }
  finish_update(b.observations);

  Metrics metrics = {
      {"charts/learning_rate", lr},
      {"charts/clip_coef", clip_coef},
      {"charts/ent_coef", ent_coef},
      {"charts/update_epochs", static_cast<double>(epochs_run)},
      {"losses/value_loss", last.value_loss.item<double>()},
      {"losses/policy_loss", last.policy_loss.item<double>()},
      {"losses/entropy", last.entropy.item<double>()},
      {"losses/old_approx_kl", last.old_approx_kl.item<double>()},
      {"losses/approx_kl", last.approx_kl.item<double>()},
      {"losses/clipfrac", clipfrac_sum.item<double>() / static_cast<double>(minibatches_run)},
  };
  if (const auto explained = explained_variance(b_values, b_returns)) {
    metrics["losses/explained_variance"] = *explained;
  }
  return metrics;
}

}  // namespace concord::algos
