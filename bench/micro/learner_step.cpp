// Cost of the learner's pieces on CartPole-sized networks with CleanRL's PPO defaults (64-64 tanh,
// separate torsos): one act() on a batch of 4 observations, one PPO update on a 128 x 4 rollout
// (4 epochs x 4 minibatches), one gradient step on a 128-sample minibatch, and GAE on 128 x 4.
//
// BM_PpoMinibatchBreakdown splits one minibatch gradient step into its phases and reports, for
// each, the microseconds it takes and the LibTorch operations it dispatches (counted with
// RecordFunction: ATen operators, nested ones included, and autograd nodes in backward), for
// CartPole's MLPs and for MinAtar's grid CNN. At CartPole's size the step is bound by
// per-operation cost, so the counts say where time can go.
#include <benchmark/benchmark.h>

#include <ATen/record_function.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <ATen/ops/randperm.h>
#include <c10/core/InferenceMode.h>
#include <torch/torch.h>

#include "concord/algos/fused_adam.h"
#include "concord/algos/fused_ppo_loss.h"
#include "concord/algos/gae.h"
#include "concord/algos/gradient_step.h"
#include "concord/algos/ppo.h"
#include "concord/core/torch_thread.h"
#include "operation_count.h"
#include "preset.h"

namespace {

using concord::algos::Ppo;
using concord::algos::PpoConfig;
using concord::algos::Rollout;
using concord::bench::active_counter;
using concord::bench::count_operations;
using concord::bench::OpCounter;
using concord::bench::print_counts;
using concord::bench::report_phases;

PpoConfig cartpole_config() {
  PpoConfig config;
  config.network.obs_shape = {4};
  config.network.action_dim = 2;
  return config;
}

Rollout random_rollout(int64_t steps, int64_t envs) {
  Rollout rollout;
  rollout.observations = torch::randn({steps, envs, 4});
  rollout.actions = torch::randint(0, 2, {steps, envs}, torch::kLong);
  rollout.log_probs = torch::full({steps, envs}, -0.69);
  rollout.values = torch::randn({steps, envs});
  rollout.rewards = torch::ones({steps, envs});
  rollout.terminated = (torch::rand({steps, envs}) < 0.05).to(torch::kFloat);
  rollout.truncated = torch::zeros({steps, envs});
  rollout.final_observations = torch::zeros_like(rollout.observations);
  rollout.bootstrap_value = torch::randn({envs});
  return rollout;
}

// Args of BM_Act and BM_PpoUpdate: the networks fused (1, as the learners run them) or composed
// (0, nn::ActorCriticImpl::set_fused(false): LibTorch's modules, as before issue 52).
void BM_Act(benchmark::State& state) {
  torch::manual_seed(1);
  Ppo ppo(cartpole_config());
  ppo.model()->set_fused(state.range(1) != 0);
  const torch::Tensor obs = torch::randn({state.range(0), 4});
  c10::InferenceMode inference;
  for (auto _ : state) benchmark::DoNotOptimize(ppo.model()->act(obs).action);
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_Act)->ArgsProduct({{4, 64}, {0, 1}})->ArgNames({"batch", "fused"});

void BM_PpoUpdate(benchmark::State& state) {
  torch::manual_seed(1);
  Ppo ppo(cartpole_config());
  ppo.model()->set_fused(state.range(0) != 0);
  const Rollout rollout = random_rollout(128, 4);
  for (auto _ : state) benchmark::DoNotOptimize(ppo.update(rollout, 0.5));
  state.SetItemsProcessed(state.iterations() * 512);  // env steps covered per update
}
BENCHMARK(BM_PpoUpdate)->Arg(0)->Arg(1)->ArgName("fused")->Unit(benchmark::kMillisecond);

// The phases of one PPO minibatch step as Ppo::update runs them (ppo.cpp), written out here so
// that each can be timed and its operations counted.
enum Phase { kGather, kForward, kLoss, kBackward, kClip, kAdam, kRead, kPhases };
constexpr const char* kPhaseNames[kPhases] = {"gather", "forward", "loss", "backward", "clip", "adam", "read"};

// The workloads of the breakdown: CleanRL's CartPole defaults (64-64 tanh MLPs, separate torsos,
// 512-step rollouts in minibatches of 128) and configs/ppo_minatar_space_invaders.toml as shipped, read
// through preset.h (MinAtar's grid CNN as a shared torso, uint8 [10, 10, 4] observations, 2048-step
// rollouts in minibatches of 512).
struct Workload {
  PpoConfig config;
  torch::Tensor observations;  // [N, ...]
  torch::Tensor actions;       // [N]
  int64_t minibatch = 0;
};

Workload workload(int64_t which) {
  Workload w;
  if (which == 0) {
    w.config = cartpole_config();
    w.observations = torch::randn({512, 4});
    w.actions = torch::randint(0, 2, {512}, torch::kLong);
    w.minibatch = 128;
  } else {
    const concord::bench::Preset preset = concord::bench::read_preset("ppo_minatar_space_invaders.toml");
    w.config = concord::bench::make_learner<Ppo>(preset)->config();
    const int64_t batch = w.config.num_steps * preset.env.num_envs;
    std::vector<int64_t> shape{batch};
    shape.insert(shape.end(), w.config.network.obs_shape.begin(), w.config.network.obs_shape.end());
    w.observations = torch::randint(0, 2, shape, torch::kUInt8);
    w.actions = torch::randint(0, w.config.network.action_dim, {batch}, torch::kLong);
    w.minibatch = batch / w.config.num_minibatches;
  }
  return w;
}

void BM_PpoMinibatchBreakdown(benchmark::State& state) {
  torch::manual_seed(1);
  // As training runs (run.flush_denormals), which the one-pass Adam needs.
  concord::core::set_flush_denormals(true);
  const Workload w = workload(state.range(1));
  const PpoConfig& config = w.config;
  Ppo ppo(config);
  auto& parameters = ppo.flat_parameters();
  torch::optim::Optimizer& optimizer = ppo.optimizer();  // Adam, from the config
  const int64_t n = w.observations.size(0);
  const torch::Tensor& observations = w.observations;
  const torch::Tensor& actions = w.actions;
  const torch::Tensor log_probs = torch::full({n}, -0.69);
  const torch::Tensor values = torch::randn({n});
  const torch::Tensor advantages = torch::randn({n});
  const torch::Tensor returns = torch::randn({n});
  const torch::Tensor mb_inds = torch::randperm(n, torch::kLong).narrow(0, 0, w.minibatch);

  std::vector<OpCounter> counts(kPhases);
  const at::CallbackHandle handle = count_operations();

  std::vector<double> seconds(kPhases, 0.0);
  bool counting = true;  // the first iteration counts operations; the rest are timed without it
  for (auto _ : state) {
    auto start = std::chrono::steady_clock::now();
    auto phase_done = [&](Phase phase) {
      const auto now = std::chrono::steady_clock::now();
      seconds[phase] += std::chrono::duration<double>(now - start).count();
      start = now;
      active_counter = counting && phase + 1 < kPhases ? &counts[phase + 1] : nullptr;
    };
    active_counter = counting ? &counts[kGather] : nullptr;
    const torch::Tensor mb_obs = observations.index_select(0, mb_inds);
    const torch::Tensor mb_actions = actions.index_select(0, mb_inds);
    torch::Tensor mb_advantages = advantages.index_select(0, mb_inds);
    const torch::Tensor mb_log_probs = log_probs.index_select(0, mb_inds);
    const torch::Tensor mb_values = values.index_select(0, mb_inds);
    const torch::Tensor mb_returns = returns.index_select(0, mb_inds);
    phase_done(kGather);
    const concord::nn::ActionEvaluation eval = ppo.model()->evaluate(mb_obs, mb_actions);
    phase_done(kForward);
    const auto [std, mean] = at::std_mean(mb_advantages);
    mb_advantages = (mb_advantages - mean).div_(std.add(1e-8));
    const auto loss_fn = state.range(0) != 0 ? concord::algos::fused_ppo_loss : concord::algos::ppo_loss;
    const concord::algos::PpoLoss loss =
        loss_fn(eval.log_prob, mb_log_probs, mb_advantages, eval.value, mb_values, mb_returns, eval.entropy,
                config.clip_coef, config.clip_vloss, config.ent_coef, config.vf_coef);
    phase_done(kLoss);
    parameters.zero_grad();
    loss.loss.backward();
    phase_done(kBackward);
    concord::algos::clip_gradient_norm(parameters.gradient(), config.max_grad_norm);
    phase_done(kClip);
    if (!concord::algos::fused_adam_step(optimizer)) optimizer.step();  // as gradient_step does
    phase_done(kAdam);
    benchmark::DoNotOptimize(loss.clipfrac.item<double>());
    phase_done(kRead);
    if (counting) at::removeCallback(handle);
    counting = false;
  }

  report_phases(state, kPhaseNames, seconds, counts);
  // The operations themselves, once, for reading beside the table.
  static std::map<std::pair<int64_t, int64_t>, bool> printed;
  if (!printed[{state.range(0), state.range(1)}]) {
    printed[{state.range(0), state.range(1)}] = true;
    std::printf("%s, %s:\n", state.range(1) ? "MinAtar grid CNN" : "CartPole MLP",
                state.range(0) ? "fused_ppo_loss" : "ppo_loss");
    for (int phase = 0; phase < kPhases; ++phase) print_counts(kPhaseNames[phase], counts[phase]);
  }
}
// Args: {0: ppo_loss composed of autograd operations, 1: fused_ppo_loss as Ppo::update runs it},
// {0: CartPole MLP, 1: MinAtar grid CNN}.
BENCHMARK(BM_PpoMinibatchBreakdown)
    ->ArgsProduct({{0, 1}, {0, 1}})
    ->ArgNames({"fused", "minatar"})
    ->Unit(benchmark::kMicrosecond);

void BM_Gae(benchmark::State& state) {
  const Rollout rollout = random_rollout(128, 4);
  const at::Tensor truncation_values = torch::zeros({128, 4});
  for (auto _ : state) {
    benchmark::DoNotOptimize(concord::algos::gae(rollout.rewards, rollout.values, rollout.terminated, rollout.truncated,
                                                 rollout.bootstrap_value, truncation_values, 0.99, 0.95));
  }
}
BENCHMARK(BM_Gae)->Unit(benchmark::kMicrosecond);

}  // namespace
