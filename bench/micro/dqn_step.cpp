// Cost of DQN's pieces on CleanRL dqn.py's CartPole-v1 setup (configs/dqn_cartpole.toml: one env,
// a 120-84 ReLU MLP, a 10k replay, batch 128, Adam): one env step as `single` runs it (act,
// step the env, observe into the replay), at epsilon 1 (before learning starts: no forward pass)
// and at epsilon 0.05 (the second half of the run), and one update.
//
// BM_DqnUpdateBreakdown splits one update into the phases Dqn::update runs (dqn.cpp) and reports,
// for each, the microseconds it takes and the LibTorch operations it dispatches (RecordFunction:
// ATen operators, nested ones included, and autograd nodes in backward), on this CartPole setup
// and on MinAtar SpaceInvaders with MinAtar dqn.py's settings.
#include <benchmark/benchmark.h>

#include <ATen/record_function.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <torch/torch.h>

#include "concord/algos/dqn.h"
#include "concord/algos/fused_adam.h"
#include "concord/algos/fused_td_loss.h"
#include "concord/algos/gradient_step.h"
#include "concord/envs/vector_env.h"
#include "concord/policies/runtime/transition_collector.h"
#include "operation_count.h"
#include "preset.h"

namespace {

using concord::algos::Dqn;
using concord::bench::active_counter;
using concord::bench::count_operations;
using concord::bench::make_learner;
using concord::bench::OpCounter;
using concord::bench::Preset;
using concord::bench::print_counts;
using concord::bench::read_preset;
using concord::bench::report_phases;

// CleanRL dqn.py's CartPole-v1 setup, as configs/dqn_cartpole.toml ships it.
const Preset& cartpole() {
  static const Preset preset = read_preset("dqn_cartpole.toml");
  return preset;
}

std::unique_ptr<Dqn> cartpole_dqn(const std::vector<std::string>& overrides = {}) {
  return make_learner<Dqn>(overrides.empty() ? cartpole() : read_preset("dqn_cartpole.toml", overrides));
}

// A replay filled by 10k steps of random acting, as at learning_starts.
void fill(Dqn& dqn, concord::policies::runtime::TransitionCollector& collector) {
  const concord::algos::ActingContext random{false, 0, 500000, 0, 1};
  for (int i = 0; i < 10000; ++i) dqn.observe(collector.step(dqn.actor(), random, nullptr));
}

// One env step of `single`'s off-policy loop: act, step, observe. Arg: the step whose epsilon
// acts (0: epsilon 1, no forward pass; 400000: epsilon 0.05).
void BM_DqnEnvStep(benchmark::State& state) {
  torch::manual_seed(1);
  const std::unique_ptr<Dqn> learner = cartpole_dqn();
  Dqn& dqn = *learner;
  concord::envs::VectorEnv env(cartpole().env);
  concord::policies::runtime::TransitionCollector collector(env, torch::kCPU);
  const concord::algos::ActingContext context{false, state.range(0), 500000, 0, 1};
  for (auto _ : state) dqn.observe(collector.step(dqn.actor(), context, nullptr));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_DqnEnvStep)->Arg(0)->Arg(400000)->ArgName("step")->Unit(benchmark::kMicrosecond);

// Dqn::observe alone over recorded steps of one CartPole env: one-step targets (Arg 1, written
// straight into the replay) against n-step ones (Arg 3: each env's window, and the transitions it
// completes), the path every stored step of apex's preset takes.
void BM_DqnObserve(benchmark::State& state) {
  torch::manual_seed(1);
  const std::unique_ptr<Dqn> learner = cartpole_dqn({"algo.dqn.n_step=" + std::to_string(state.range(0))});
  Dqn& dqn = *learner;
  concord::envs::VectorEnv env(cartpole().env);
  concord::policies::runtime::TransitionCollector collector(env, torch::kCPU);
  const concord::algos::ActingContext context{false, 0, 500000, 0, 1};
  std::vector<concord::algos::TensorMap> steps;
  for (int i = 0; i < 4096; ++i) steps.push_back(concord::algos::clone(collector.step(dqn.actor(), context, nullptr)));
  size_t next = 0;
  for (auto _ : state) {
    dqn.observe(steps[next]);
    next = (next + 1) % steps.size();
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_DqnObserve)->Arg(1)->Arg(3)->ArgName("n_step")->Unit(benchmark::kMicrosecond);

// The acting half alone, without the env and the replay (epsilon 0.05).
void BM_DqnAct(benchmark::State& state) {
  torch::manual_seed(1);
  const std::unique_ptr<Dqn> learner = cartpole_dqn();
  Dqn& dqn = *learner;
  const torch::Tensor observation = torch::randn({1, 4});
  const concord::algos::ActingContext context{false, 400000, 500000, 0, 1};
  c10::InferenceMode inference;
  for (auto _ : state) benchmark::DoNotOptimize(dqn.actor().act(observation, context).actions);
}
BENCHMARK(BM_DqnAct)->Unit(benchmark::kMicrosecond);

void BM_DqnUpdate(benchmark::State& state) {
  torch::manual_seed(1);
  const std::unique_ptr<Dqn> learner = cartpole_dqn();
  Dqn& dqn = *learner;
  concord::envs::VectorEnv env(cartpole().env);
  concord::policies::runtime::TransitionCollector collector(env, torch::kCPU);
  fill(dqn, collector);
  int64_t step = 10010;
  for (auto _ : state) {
    benchmark::DoNotOptimize(dqn.update(step, 0.5));
    step += 10;
  }
}
BENCHMARK(BM_DqnUpdate)->Unit(benchmark::kMicrosecond);

// The operations of one env step at epsilon 0.05, split into acting (act() alone), the rest of
// the collector's step (the env and the transition's tensors) and observe() into the replay.
void BM_DqnEnvStepOperations(benchmark::State& state) {
  torch::manual_seed(1);
  const std::unique_ptr<Dqn> learner = cartpole_dqn();
  Dqn& dqn = *learner;
  concord::envs::VectorEnv env(cartpole().env);
  concord::policies::runtime::TransitionCollector collector(env, torch::kCPU);
  const concord::algos::ActingContext context{false, 400000, 500000, 0, 1};
  OpCounter act, step, observe;
  const torch::Tensor observation = torch::randn({1, 4});
  const at::CallbackHandle handle = count_operations();
  for (auto _ : state) {
    {
      c10::InferenceMode inference;
      active_counter = &act;
      benchmark::DoNotOptimize(dqn.actor().act(observation, context).actions);
    }
    active_counter = &step;
    const concord::algos::TensorMap transition = collector.step(dqn.actor(), context, nullptr);
    active_counter = &observe;
    dqn.observe(transition);
    active_counter = nullptr;
  }
  at::removeCallback(handle);
  const double n = static_cast<double>(state.iterations());
  state.counters["act_ops"] = static_cast<double>(act.total) / n;
  state.counters["step_ops"] = static_cast<double>(step.total - act.total) / n;
  state.counters["observe_ops"] = static_cast<double>(observe.total) / n;
  static bool printed = false;
  if (!printed && state.iterations() == 1) {
    printed = true;
    print_counts("act", act);
    print_counts("step+act", step);
    print_counts("observe", observe);
  }
}
BENCHMARK(BM_DqnEnvStepOperations)->Iterations(1);

// BM_DqnUpdate with another thread acting beside it all the while (epsilon 0.05, its own replica
// of the network and its own env), as under `async_learner`: what one process's two threads cost
// each other.
void BM_DqnUpdateBesideActing(benchmark::State& state) {
  torch::manual_seed(1);
  const std::unique_ptr<Dqn> learner = cartpole_dqn();
  Dqn& dqn = *learner;
  concord::envs::VectorEnv env(cartpole().env);
  concord::policies::runtime::TransitionCollector collector(env, torch::kCPU);
  fill(dqn, collector);
  std::atomic<bool> done{false};
  std::atomic<int64_t> acted{0};
  std::unique_ptr<concord::algos::ActorReplica> replica = dqn.make_actor_replica();
  std::thread actor([&] {
    concord::envs::VectorEnv actor_env(cartpole().env);
    concord::policies::runtime::TransitionCollector actor_collector(actor_env, torch::kCPU);
    const concord::algos::ActingContext context{false, 400000, 500000, 0, 1};
    while (!done.load()) {
      benchmark::DoNotOptimize(actor_collector.step(*replica, context, nullptr));
      acted.fetch_add(1);
    }
  });
  int64_t step = 10010;
  for (auto _ : state) {
    benchmark::DoNotOptimize(dqn.update(step, 0.5));
    step += 10;
  }
  done.store(true);
  actor.join();
  state.counters["actor_steps_per_update"] =
      static_cast<double>(acted.load()) / static_cast<double>(state.iterations());
}
BENCHMARK(BM_DqnUpdateBesideActing)->Unit(benchmark::kMicrosecond);

enum Phase { kSample, kTargets, kForward, kBackward, kClip, kOptimizer, kRead, kPhases };
constexpr const char* kPhaseNames[kPhases] = {"sample", "targets", "forward", "backward", "clip", "optim", "read"};

// The presets of the breakdown (Arg): 0, CleanRL dqn.py's CartPole-v1 (configs/dqn_cartpole.toml);
// 1, MinAtar SpaceInvaders with MinAtar dqn.py's settings (configs/dqn_minatar_space_invaders.toml:
// the grid CNN, batch 32, Huber loss, centered RMSprop), one update per env step.
const Preset& breakdown_preset(int64_t which) {
  static const Preset minatar = read_preset("dqn_minatar_space_invaders.toml");
  return which == 0 ? cartpole() : minatar;
}

// The phases of one Dqn::update gradient step (dqn.cpp), written out here so that each can be
// timed and its operations counted.
void BM_DqnUpdateBreakdown(benchmark::State& state) {
  namespace replay = concord::algos::replay_field;
  torch::manual_seed(1);
  const Preset& preset = breakdown_preset(state.range(0));
  const std::unique_ptr<Dqn> learner = make_learner<Dqn>(preset);
  Dqn& dqn = *learner;
  const concord::algos::DqnConfig& config = dqn.config();
  concord::envs::VectorEnv env(preset.env);
  concord::policies::runtime::TransitionCollector collector(env, torch::kCPU);
  fill(dqn, collector);
  auto& parameters = dqn.flat_parameters();
  torch::optim::Optimizer& optimizer = dqn.optimizer();
  concord::core::Rng rng(1);

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
    active_counter = counting ? &counts[kSample] : nullptr;
    const concord::algos::ReplaySample sample = dqn.replay()->sample(config.batch_size, rng);
    phase_done(kSample);
    const torch::Tensor y = dqn.td_targets(sample.fields);
    phase_done(kTargets);
    const concord::algos::TdLoss td =
        concord::algos::fused_td_loss(dqn.online_network()->forward(sample.fields.at(replay::kObservation)),
                                      sample.fields.at(replay::kAction), y, torch::Tensor(), config.loss);
    const torch::Tensor& loss = td.loss;
    phase_done(kForward);
    parameters.zero_grad();
    loss.backward();
    phase_done(kBackward);
    // As gradient_step: no clipping without a threshold (both presets set none).
    if (config.max_grad_norm > 0.0) concord::algos::clip_gradient_norm(parameters.gradient(), config.max_grad_norm);
    phase_done(kClip);
    // As gradient_step: Adam over the flat parameter in one pass.
    if (!concord::algos::fused_adam_step(optimizer)) optimizer.step();
    phase_done(kOptimizer);
    benchmark::DoNotOptimize(loss.item<double>() + td.q_taken.mean().item<double>());
    phase_done(kRead);
    if (counting) at::removeCallback(handle);
    counting = false;
  }

  report_phases(state, kPhaseNames, seconds, counts);
  static bool printed[2] = {false, false};
  if (!printed[state.range(0)]) {
    printed[state.range(0)] = true;
    for (int phase = 0; phase < kPhases; ++phase) print_counts(kPhaseNames[phase], counts[phase]);
  }
}
BENCHMARK(BM_DqnUpdateBreakdown)->Arg(0)->Arg(1)->ArgName("minatar")->Unit(benchmark::kMicrosecond);

// The floor under an update that no dispatch overhead explains: the matrix products of its
// 120x84 layer on a batch of 128, each alone (Arg): 0, the online or target forward pass
// (addmm, [128, 120] x [120, 84]); 1, the backward pass's weight gradient ([84, 128] x [128, 120]);
// 2, its input gradient ([128, 84] x [84, 120]). An update runs 0 twice, then 1 and 2 once.
void BM_DqnUpdateMatrixProduct(benchmark::State& state) {
  torch::manual_seed(1);
  const torch::Tensor activations = torch::randn({128, 120});
  const torch::Tensor weight = torch::randn({84, 120});
  const torch::Tensor bias = torch::randn({84});
  const torch::Tensor output_gradient = torch::randn({128, 84});
  c10::NoGradGuard no_grad;
  for (auto _ : state) {
    switch (state.range(0)) {
      case 0:
        benchmark::DoNotOptimize(torch::addmm(bias, activations, weight.t()));
        break;
      case 1:
        benchmark::DoNotOptimize(torch::mm(output_gradient.t(), activations));
        break;
      default:
        benchmark::DoNotOptimize(torch::mm(output_gradient, weight));
        break;
    }
  }
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * 128 * 120 * 84, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_DqnUpdateMatrixProduct)->Arg(0)->Arg(1)->Arg(2)->ArgName("product")->Unit(benchmark::kMicrosecond);

// One Adam step over a CartPole Q-network's 10,934 parameters (4-120-84-2) whose moments have
// decayed into denormals, as those of parameters with a zero gradient do (half the gradient is 0
// here), with denormals flushed to zero or not (first Arg: run.flush_denormals) and through
// torch::optim::Adam's eight operations or fused_adam_step's one pass (second Arg).
void BM_AdamStepDenormalMoments(benchmark::State& state) {
  const bool flush = state.range(0) != 0;
  const bool fused = state.range(1) != 0;
  constexpr int64_t kParameters = 4 * 120 + 120 + 120 * 84 + 84 + 84 * 2 + 2;
  const torch::Tensor parameter = torch::ones({kParameters}).requires_grad_(true);
  torch::optim::Adam adam({parameter}, torch::optim::AdamOptions(2.5e-4));
  torch::Tensor gradient = torch::zeros({kParameters});
  gradient.slice(0, 0, kParameters, 2).fill_(0.5);
  parameter.mutable_grad() = gradient;
  adam.step();
  auto& moments = static_cast<torch::optim::AdamParamState&>(*adam.state().begin()->second);
  moments.exp_avg().fill_(1e-3);
  moments.exp_avg_sq().fill_(1e-6);
  // Two thousand steps first, unflushed: the first moment of a zero gradient reaches the
  // denormals in about 800 (x 0.9 each step) and stays there.
  at::globalContext().setFlushDenormal(false);
  for (int i = 0; i < 2000; ++i) adam.step();
  at::globalContext().setFlushDenormal(flush);
  for (auto _ : state) {
    if (!fused || !concord::algos::fused_adam_step(adam)) adam.step();
  }
  at::globalContext().setFlushDenormal(false);
}
BENCHMARK(BM_AdamStepDenormalMoments)
    ->ArgsProduct({{0, 1}, {0, 1}})
    ->ArgNames({"flush", "fused"})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
