// Cost of the learner's pieces on CartPole-sized networks with CleanRL's PPO defaults (64-64 tanh,
// separate torsos): one act() on a batch of 4 observations, one PPO update on a 128 x 4 rollout
// (4 epochs x 4 minibatches), one gradient step on a 128-sample minibatch, and GAE on 128 x 4.
#include <benchmark/benchmark.h>

#include <ATen/ops/randperm.h>
#include <c10/core/InferenceMode.h>
#include <torch/torch.h>

#include "concord/algos/gae.h"
#include "concord/algos/ppo.h"

namespace {

using concord::algos::Ppo;
using concord::algos::PpoConfig;
using concord::algos::Rollout;

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
  rollout.truncation_values = torch::zeros({steps, envs});
  rollout.bootstrap_value = torch::randn({envs});
  return rollout;
}

void BM_Act(benchmark::State& state) {
  torch::manual_seed(1);
  Ppo ppo(cartpole_config());
  const torch::Tensor obs = torch::randn({state.range(0), 4});
  c10::InferenceMode inference;
  for (auto _ : state) benchmark::DoNotOptimize(ppo.model()->act(obs).action);
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_Act)->Arg(4)->Arg(64);

void BM_PpoUpdate(benchmark::State& state) {
  torch::manual_seed(1);
  Ppo ppo(cartpole_config());
  const Rollout rollout = random_rollout(128, 4);
  for (auto _ : state) benchmark::DoNotOptimize(ppo.update(rollout, 0.5));
  state.SetItemsProcessed(state.iterations() * 512);  // env steps covered per update
}
BENCHMARK(BM_PpoUpdate)->Unit(benchmark::kMillisecond);

void BM_Gae(benchmark::State& state) {
  const Rollout rollout = random_rollout(128, 4);
  for (auto _ : state) {
    benchmark::DoNotOptimize(concord::algos::gae(rollout.rewards, rollout.values, rollout.terminated, rollout.truncated,
                                                 rollout.bootstrap_value, rollout.truncation_values, 0.99, 0.95));
  }
}
BENCHMARK(BM_Gae)->Unit(benchmark::kMicrosecond);

}  // namespace
