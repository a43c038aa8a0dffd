// A reference oracle for Ppo::update: CleanRL's ppo.py update, transcribed line by line into
// LibTorch C++ below, run on the same batch from the same parameters and the same shuffles. It
// shares no code with Concord's learner (not gae(), ppo_loss() nor gradient_step()), so agreement
// means Concord's PPO is CleanRL's, not merely self-consistent.
#include "concord/algos/ppo.h"

#include <ATen/Context.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/randint.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/randperm.h>
#include <ATen/ops/zeros.h>
#include <c10/core/GradMode.h>
#include <gtest/gtest.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adam.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "concord/algos/gae.h"

#include "algos/tensor_test_util.h"

namespace concord::algos {
namespace {

using namespace test_util;

// ppo.py's CartPole batch shape scaled down: T * B = 64 samples in 4 minibatches of 16, so
// CleanRL's b_inds[start:start + 16] slices and Concord's tensor_split(4) cut the same minibatches.
constexpr int64_t kSteps = 16;
constexpr int64_t kEnvs = 4;
constexpr int64_t kObsDim = 4;
constexpr int64_t kActions = 2;

// Parameters (absolute) and logged losses (relative to max(1, |x|)). Float32 end to end on both
// sides: over 16 Adam steps the two only differ by summation order (observed: below 1e-6).
constexpr double kOracleTol = 1e-5;

PpoConfig cleanrl_config() {
  PpoConfig config;  // every default is ppo.py's
  config.num_steps = kSteps;
  config.network = cartpole_network();
  return config;
}

// ppo.py's `Agent` for vector observations, with its own (plain torch::nn) modules.
struct CleanRlAgent {
  torch::nn::Sequential critic{torch::nn::Linear(kObsDim, 64), torch::nn::Tanh(), torch::nn::Linear(64, 64),
                               torch::nn::Tanh(), torch::nn::Linear(64, 1)};
  torch::nn::Sequential actor{torch::nn::Linear(kObsDim, 64), torch::nn::Tanh(), torch::nn::Linear(64, 64),
                              torch::nn::Tanh(), torch::nn::Linear(64, kActions)};

  // agent.parameters(): critic first, as ppo.py's __init__ registers it.
  std::vector<torch::Tensor> parameters() const {
    std::vector<torch::Tensor> all = critic->parameters();
    for (const torch::Tensor& p : actor->parameters()) all.push_back(p);
    return all;
  }

  // The oracle's parameter standing for each of Concord's ActorCritic parameters (by name).
  std::map<std::string, torch::Tensor> as_concord_names() const {
    std::map<std::string, torch::Tensor> out;
    const std::vector<std::pair<std::string, std::string>> layers = {
        {"critic_torso.fc0", "0"}, {"critic_torso.fc1", "2"}, {"critic_head", "4"},
        {"actor_torso.fc0", "0"},  {"actor_torso.fc1", "2"},  {"actor_head", "4"}};
    const auto critic_params = critic->named_parameters();
    const auto actor_params = actor->named_parameters();
    for (const auto& [concord_layer, index] : layers) {
      const auto& params = concord_layer.rfind("critic", 0) == 0 ? critic_params : actor_params;
      for (const char* kind : {".weight", ".bias"}) out[concord_layer + kind] = params[index + kind];
    }
    return out;
  }

  struct ActionAndValue {
    torch::Tensor log_prob, entropy, value;
  };

  // get_action_and_value(x, action), with torch.distributions.Categorical(logits=...)'s own
  // normalisation (logits - logsumexp) and entropy (clamp to the dtype's min, -sum(p log p)).
  ActionAndValue get_action_and_value(const torch::Tensor& x, const torch::Tensor& action) {
    const torch::Tensor raw = actor->forward(x);
    const torch::Tensor logits = raw - raw.logsumexp(-1, /*keepdim=*/true);
    const torch::Tensor probs = logits.exp();
    const torch::Tensor log_prob = logits.gather(-1, action.unsqueeze(-1)).squeeze(-1);
    const torch::Tensor entropy = -(logits.clamp_min(std::numeric_limits<float>::lowest()) * probs).sum(-1);
    return {log_prob, entropy, critic->forward(x)};
  }
};

// What ppo.py's storage holds after its rollout loop. Its dones[t] is `next_done` as it stood
// when obs[t] was stored: the episode ended on the step *before* t. Concord's terminated[t] is
// the flag env.step returned for step t itself, so dones[t + 1] = terminated[t] and next_done =
// terminated[T - 1]; dones[0] (the previous rollout's next_done) never enters ppo.py's GAE.
struct CleanRlStorage {
  torch::Tensor obs, actions, logprobs, rewards, dones, values;  // [T, B(, obs_dim)]
  torch::Tensor next_done, next_value;                           // [B]
};

CleanRlStorage to_cleanrl(const Rollout& rollout) {
  CleanRlStorage s;
  s.obs = rollout.observations.clone();
  s.actions = rollout.actions.clone();
  s.logprobs = rollout.log_probs.detach().clone();
  s.rewards = rollout.rewards.clone();
  s.values = rollout.values.detach().clone();
  s.dones = torch::zeros_like(s.rewards);
  s.dones.slice(0, 1).copy_(rollout.terminated.slice(0, 0, kSteps - 1));
  s.next_done = rollout.terminated[kSteps - 1].clone();
  s.next_value = rollout.bootstrap_value.detach().clone();
  return s;
}

struct CleanRlGae {
  torch::Tensor advantages, returns;  // [T, B]
};

// ppo.py's "bootstrap value if not done" block.
CleanRlGae cleanrl_gae(const CleanRlStorage& s, double gamma, double gae_lambda) {
  c10::NoGradGuard no_grad;
  torch::Tensor advantages = torch::zeros_like(s.rewards);
  torch::Tensor lastgaelam = torch::zeros_like(s.next_value);
  for (int64_t t = kSteps - 1; t >= 0; --t) {
    torch::Tensor nextnonterminal, nextvalues;
    if (t == kSteps - 1) {
      nextnonterminal = 1.0 - s.next_done;
      nextvalues = s.next_value;
    } else {
      nextnonterminal = 1.0 - s.dones[t + 1];
      nextvalues = s.values[t + 1];
    }
    const torch::Tensor delta = s.rewards[t] + gamma * nextvalues * nextnonterminal - s.values[t];
    lastgaelam = delta + gamma * gae_lambda * nextnonterminal * lastgaelam;
    advantages[t] = lastgaelam;
  }
  return {advantages, advantages + s.values};
}

// What ppo.py writes to TensorBoard after an update.
struct CleanRlLog {
  double value_loss, policy_loss, entropy, old_approx_kl, approx_kl, clipfrac, explained_variance;
};

// ppo.py's update, from "flatten the batch" to the logged losses. Shuffles with torch.randperm
// on the global generator where ppo.py calls np.random.shuffle: the only change, so that both
// sides see the same minibatches.
CleanRlLog cleanrl_update(CleanRlAgent& agent, torch::optim::Adam& optimizer, const CleanRlStorage& s,
                          const PpoConfig& args) {
  const CleanRlGae gae_out = cleanrl_gae(s, args.gamma, args.gae_lambda);
  const torch::Tensor b_obs = s.obs.reshape({-1, kObsDim});
  const torch::Tensor b_logprobs = s.logprobs.reshape(-1);
  const torch::Tensor b_actions = s.actions.reshape(-1);
  const torch::Tensor b_advantages = gae_out.advantages.reshape(-1);
  const torch::Tensor b_returns = gae_out.returns.reshape(-1);
  const torch::Tensor b_values = s.values.reshape(-1);
  const int64_t batch_size = kSteps * kEnvs;
  const int64_t minibatch_size = batch_size / args.num_minibatches;

  const double clip = args.clip_coef;
  std::vector<double> clipfracs;
  torch::Tensor pg_loss, v_loss, entropy_loss, old_approx_kl, approx_kl;
  for (int64_t epoch = 0; epoch < args.update_epochs; ++epoch) {
    const torch::Tensor b_inds = torch::randperm(batch_size, torch::kLong);
    for (int64_t start = 0; start < batch_size; start += minibatch_size) {
      const torch::Tensor mb_inds = b_inds.slice(0, start, start + minibatch_size);
      const auto out = agent.get_action_and_value(b_obs.index({mb_inds}), b_actions.index({mb_inds}));
      const torch::Tensor logratio = out.log_prob - b_logprobs.index({mb_inds});
      const torch::Tensor ratio = logratio.exp();
      {
        c10::NoGradGuard no_grad;
        old_approx_kl = (-logratio).mean();
        approx_kl = ((ratio - 1) - logratio).mean();
        clipfracs.push_back(((ratio - 1.0).abs() > clip).to(torch::kFloat).mean().item<double>());
      }
      torch::Tensor mb_advantages = b_advantages.index({mb_inds});
      if (args.norm_adv) mb_advantages = (mb_advantages - mb_advantages.mean()) / (mb_advantages.std() + 1e-8);

      const torch::Tensor pg_loss1 = -mb_advantages * ratio;
      const torch::Tensor pg_loss2 = -mb_advantages * torch::clamp(ratio, 1 - clip, 1 + clip);
      pg_loss = torch::max(pg_loss1, pg_loss2).mean();

      const torch::Tensor newvalue = out.value.view(-1);
      const torch::Tensor mb_returns = b_returns.index({mb_inds});
      const torch::Tensor mb_values = b_values.index({mb_inds});
      if (args.clip_vloss) {
        const torch::Tensor v_loss_unclipped = (newvalue - mb_returns).pow(2);
        const torch::Tensor v_clipped = mb_values + torch::clamp(newvalue - mb_values, -clip, clip);
        const torch::Tensor v_loss_clipped = (v_clipped - mb_returns).pow(2);
        v_loss = 0.5 * torch::max(v_loss_unclipped, v_loss_clipped).mean();
      } else {
        v_loss = 0.5 * (newvalue - mb_returns).pow(2).mean();
      }
      entropy_loss = out.entropy.mean();
      const torch::Tensor loss = pg_loss - args.ent_coef * entropy_loss + v_loss * args.vf_coef;

      optimizer.zero_grad();
      loss.backward();
      torch::nn::utils::clip_grad_norm_(agent.parameters(), args.max_grad_norm);
      optimizer.step();
    }
  }

  double clipfrac_sum = 0.0;
  for (double c : clipfracs) clipfrac_sum += c;
  const torch::Tensor var_y = b_returns.var(/*unbiased=*/false);
  const double explained_var = var_y.item<double>() == 0.0
                                   ? std::nan("")
                                   : 1.0 - ((b_returns - b_values).var(/*unbiased=*/false) / var_y).item<double>();
  return {v_loss.item<double>(),
          pg_loss.item<double>(),
          entropy_loss.item<double>(),
          old_approx_kl.item<double>(),
          approx_kl.item<double>(),
          clipfrac_sum / static_cast<double>(clipfracs.size()),
          explained_var};
}

// A CartPole-like rollout acted on by `model`: standard normal observations, random actions, a
// reward of 1 per step, and terminations at the start, middle and last step of the rollout (the
// last exercises next_done). No truncations: there ppo.py (done = terminated | truncated, no
// bootstrap) and Concord's truncation_values bootstrap deliberately differ.
Rollout cartpole_like_rollout(nn::ActorCritic& model) {
  c10::NoGradGuard no_grad;
  Rollout rollout;
  rollout.observations = at::randn({kSteps, kEnvs, kObsDim});
  rollout.actions = at::randint(0, kActions, {kSteps, kEnvs}, at::kLong);
  // The behaviour policy is the model itself, so every update's first ratio is 1, as in ppo.py.
  const nn::ActionEvaluation eval = model->evaluate(rollout.observations.flatten(0, 1), rollout.actions.flatten(0, 1));
  rollout.log_probs = eval.log_prob.reshape({kSteps, kEnvs});
  rollout.values = eval.value.reshape({kSteps, kEnvs});
  rollout.rewards = at::ones({kSteps, kEnvs});
  rollout.terminated = at::zeros({kSteps, kEnvs});
  rollout.terminated[0][2] = 1.0;
  rollout.terminated[3][0] = 1.0;
  rollout.terminated[9][1] = 1.0;
  rollout.terminated[kSteps - 1][1] = 1.0;
  rollout.terminated[kSteps - 1][3] = 1.0;
  rollout.truncated = at::zeros({kSteps, kEnvs});
  rollout.final_observations = at::zeros_like(rollout.observations);
  rollout.bootstrap_value = model->value(at::randn({kEnvs, kObsDim}));
  return rollout;
}

std::string scientific(double x) {
  std::ostringstream out;
  out << std::scientific << x;
  return out.str();
}

// Concord's learner and the oracle, starting from the same parameters.
struct Pair {
  Ppo ppo;
  nn::ActorCritic model = ppo.model();
  CleanRlAgent agent;
  // ppo.py: optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)
  torch::optim::Adam optimizer{agent.parameters(),
                               torch::optim::AdamOptions(ppo.config().learning_rate).eps(ppo.config().adam_eps)};

  explicit Pair(PpoConfig config = cleanrl_config()) : ppo(std::move(config)) {
    const auto concord_params = model->named_parameters();
    const auto oracle_params = agent.as_concord_names();
    EXPECT_EQ(concord_params.size(), oracle_params.size());
    c10::NoGradGuard no_grad;
    for (const auto& item : concord_params) {
      const auto it = oracle_params.find(item.key());
      if (it == oracle_params.end()) {
        ADD_FAILURE() << "no oracle parameter for " << item.key();
        continue;
      }
      EXPECT_EQ(it->second.sizes(), item.value().sizes()) << item.key();
      it->second.copy_(item.value());
    }
  }

  // Largest |Concord - oracle| over every parameter element.
  double max_parameter_diff() {
    const auto oracle_params = agent.as_concord_names();
    double diff = 0.0;
    for (const auto& item : model->named_parameters()) {
      diff = std::max(diff, (item.value() - oracle_params.at(item.key())).abs().max().item<double>());
    }
    return diff;
  }

  // One update on each side from the same generator state; checks both drew the same numbers.
  // This thread has no generator of its own (see core/torch_thread.h), so Ppo shuffles with the
  // global one that manual_seed seeds.
  std::pair<Metrics, CleanRlLog> update(const Rollout& rollout, uint64_t seed) {
    at::manual_seed(seed);
    const Metrics metrics = ppo.update(rollout, /*progress=*/0.0);
    const at::Tensor after_concord = at::randn({8});
    at::manual_seed(seed);
    const CleanRlLog oracle = cleanrl_update(agent, optimizer, to_cleanrl(rollout), ppo.config());
    const at::Tensor after_oracle = at::randn({8});
    // Concord drew from the generator exactly what the oracle's update_epochs randperms did, and
    // nothing else: the shuffles coincide.
    EXPECT_TRUE(after_concord.equal(after_oracle));
    return {metrics, oracle};
  }
};

void expect_metrics_match(const Metrics& concord, const CleanRlLog& cleanrl, double learning_rate = 2.5e-4) {
  const auto near = [](double a, double b) { return std::abs(a - b) <= kOracleTol * std::max(1.0, std::abs(b)); };
  EXPECT_PRED2(near, concord.at("losses/value_loss"), cleanrl.value_loss);
  EXPECT_PRED2(near, concord.at("losses/policy_loss"), cleanrl.policy_loss);
  EXPECT_PRED2(near, concord.at("losses/entropy"), cleanrl.entropy);
  EXPECT_PRED2(near, concord.at("losses/old_approx_kl"), cleanrl.old_approx_kl);
  EXPECT_PRED2(near, concord.at("losses/approx_kl"), cleanrl.approx_kl);
  // A mean over minibatches of multiples of 1/16: a single sample on the other side of the clip
  // boundary would move it by 1/256.
  EXPECT_NEAR(concord.at("losses/clipfrac"), cleanrl.clipfrac, 1e-9);
  EXPECT_PRED2(near, concord.at("losses/explained_variance"), cleanrl.explained_variance);
  EXPECT_DOUBLE_EQ(concord.at("charts/learning_rate"), learning_rate);
  EXPECT_DOUBLE_EQ(concord.at("charts/update_epochs"), 4.0);
}

// Localises a failure of the tests below to GAE, and checks the terminated -> dones mapping.
TEST(PpoCleanRlOracle, GaeMatchesCleanRlLoop) {
  at::manual_seed(31);
  Ppo ppo(cleanrl_config());
  nn::ActorCritic model = ppo.model();
  const Rollout rollout = cartpole_like_rollout(model);
  const GaeResult concord = gae(rollout.rewards, rollout.values, rollout.terminated, rollout.truncated,
                                rollout.bootstrap_value, at::zeros({kSteps, kEnvs}), 0.99, 0.95);
  const CleanRlGae cleanrl = cleanrl_gae(to_cleanrl(rollout), 0.99, 0.95);
  expect_all_near(concord.advantages, cleanrl.advantages);
  expect_all_near(concord.returns, cleanrl.returns);
  // The episode end at the last step must cut the bootstrap: A = r - V there.
  EXPECT_NEAR(cleanrl.advantages[kSteps - 1][1].item<double>(), 1.0 - rollout.values[kSteps - 1][1].item<double>(),
              kTol);
}

TEST(PpoCleanRlOracle, OneUpdateMatchesCleanRlPpo) {
  at::manual_seed(32);
  Pair pair;
  ASSERT_EQ(pair.max_parameter_diff(), 0.0);
  const std::vector<at::Tensor> before = parameter_copies(pair.model);
  const Rollout rollout = cartpole_like_rollout(pair.model);

  const auto [metrics, oracle] = pair.update(rollout, /*seed=*/1234);

  // The comparison means something only if 16 Adam steps moved the parameters well past the
  // tolerance.
  double moved = 0.0;
  const std::vector<at::Tensor> after = pair.model->parameters();
  for (size_t i = 0; i < before.size(); ++i) moved = std::max(moved, (after[i] - before[i]).abs().max().item<double>());
  EXPECT_GT(moved, 100 * kOracleTol);

  const double diff = pair.max_parameter_diff();
  RecordProperty("max_parameter_diff", scientific(diff));
  RecordProperty("max_parameter_change", scientific(moved));
  EXPECT_LE(diff, kOracleTol);
  expect_metrics_match(metrics, oracle);
  // The first minibatch saw ratio 1, the last one a moved policy.
  EXPECT_GT(metrics.at("losses/approx_kl"), 0.0);
}

// Adam's moments and step count carry over between updates in ppo.py (one optimiser for the run);
// a second update from the same state catches a reset or a miscounted bias correction. At
// CleanRL's rate the policy moves too little for the surrogate's clip to bind (clipfrac stays 0),
// so this one runs 40 times faster to exercise both clips.
TEST(PpoCleanRlOracle, SecondUpdateKeepsAdamStateLikeCleanRl) {
  at::manual_seed(33);
  PpoConfig config = cleanrl_config();
  config.learning_rate = 1e-2;
  Pair pair(config);
  const Rollout first = cartpole_like_rollout(pair.model);
  const auto [first_metrics, first_oracle] = pair.update(first, /*seed=*/5);
  ASSERT_LE(pair.max_parameter_diff(), kOracleTol);
  expect_metrics_match(first_metrics, first_oracle, config.learning_rate);

  const Rollout second = cartpole_like_rollout(pair.model);
  const auto [metrics, oracle] = pair.update(second, /*seed=*/6);
  const double diff = pair.max_parameter_diff();
  RecordProperty("max_parameter_diff", scientific(diff));
  EXPECT_LE(diff, kOracleTol);
  expect_metrics_match(metrics, oracle, config.learning_rate);
  EXPECT_GT(first_metrics.at("losses/clipfrac") + metrics.at("losses/clipfrac"), 0.0);
}

}  // namespace
}  // namespace concord::algos
