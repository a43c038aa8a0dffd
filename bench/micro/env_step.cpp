// Cost of one Env::step for each classic-control environment (one env, one thread, random
// discrete or continuous actions drawn outside the timed region in batches).
#include <benchmark/benchmark.h>

#include <vector>

#include "concord/core/crc32c.h"
#include "concord/envs/random_actions.h"
#include "concord/envs/registry.h"

namespace {

void BM_EnvStep(benchmark::State& state, const char* env_id) {
  auto env = concord::envs::make_env(env_id);
  const concord::envs::Space& action_space = env->spec().action_space;
  std::vector<float> observation(env->spec().observation_space.flat_size());
  concord::core::Rng rng(1);
  constexpr int64_t kActions = 4096;
  std::vector<int64_t> indices(kActions);
  std::vector<float> values(kActions * action_space.flat_size());
  if (action_space.is_discrete()) {
    concord::envs::sample_actions(action_space, rng, kActions, indices.data());
  } else {
    concord::envs::sample_actions(action_space, rng, kActions, values.data());
  }
  env->reset(1, observation.data());
  int64_t i = 0;
  for (auto _ : state) {
    concord::envs::Action action{indices[i], values.data() + i * action_space.flat_size()};
    const concord::envs::StepResult result = env->step(action, observation.data());
    if (result.terminated || result.truncated) env->reset(std::nullopt, observation.data());
    benchmark::DoNotOptimize(observation.data());
    i = (i + 1) % kActions;
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_MaskedCrc32c(benchmark::State& state) {
  std::vector<char> bytes(static_cast<size_t>(state.range(0)), 'x');
  for (auto _ : state) benchmark::DoNotOptimize(concord::core::masked_crc32c(bytes.data(), bytes.size()));
  state.SetBytesProcessed(state.iterations() * state.range(0));
}

}  // namespace

BENCHMARK_CAPTURE(BM_EnvStep, CartPole, "CartPole-v1");
BENCHMARK_CAPTURE(BM_EnvStep, Acrobot, "Acrobot-v1");
BENCHMARK_CAPTURE(BM_EnvStep, MountainCar, "MountainCar-v0");
BENCHMARK_CAPTURE(BM_EnvStep, MountainCarContinuous, "MountainCarContinuous-v0");
BENCHMARK_CAPTURE(BM_EnvStep, Pendulum, "Pendulum-v1");
BENCHMARK(BM_MaskedCrc32c)->Arg(64)->Arg(4096);
