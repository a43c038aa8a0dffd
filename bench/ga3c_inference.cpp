// ga3c_inference: predictions per second (PPS) of central batched inference (GA3C) against every
// agent running its own batch-1 inference (the A3C way), one env per agent: on CartPole-v1 with
// MLPs, with --minatar on MinAtar Breakout with MinAtar's convolutional network, or with --large on
// MinAtar Breakout drawn as 4x84x84 frames with GA3C's larger network (the Nature-DQN CNN: conv 32
// 8x8 stride 4, conv 64 4x4 stride 2, conv 64 3x3, FC 512). --device puts both columns' networks
// on a GPU (the predictor's batch, or every agent's copy); --own-device moves the per-agent column
// alone (e.g. GA3C on the GPU against A3C on the CPU's cores).
//
//   central  the `central_inference` policy itself, with 1 predictor (prediction_batch 128) and a
//            learner that does nothing, so only stepping and inference cost time; PPS is the
//            policy's own charts/PPS (observations acted on per second)
//   own      N threads, each with its own copy of the network and its own env: act() on one
//            observation, step, repeat; PPS = all their act() calls per second
//
// for N in --agents and for a 64-64 and a 256-256 network (tanh MLPs, separate actor and critic
// torsos). LibTorch runs single-threaded (torch::set_num_threads(1)) in both columns, so the
// comparison is of batching, not of intra-op parallelism. With --sweep it also measures TPS of a
// few static (agents, predictors, trainers) configurations against the dynamic adjustment.

#include <CLI/CLI.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <c10/core/InferenceMode.h>
#include <torch/torch.h>

#include "concord/algos/a2c.h"
#include "concord/core/device.h"
#include "concord/core/torch_thread.h"
#include "concord/envs/registry.h"
#include "concord/nn/actor_critic.h"
#include "concord/nn/flat_parameters.h"
#include "concord/policies/central_inference.h"
#include "concord/policies/runtime/observation_rows.h"
#include "machine_load.h"

namespace {

using concord::policies::CentralInferenceConfig;
using concord::policies::CentralInferencePolicy;
using Clock = std::chrono::steady_clock;

concord::nn::ActorCriticConfig cartpole_network(int64_t width) {
  concord::nn::ActorCriticConfig config;
  config.obs_shape = {4};
  config.action_dim = 2;
  config.hidden_sizes = {width, width};
  return config;
}

// A learner that learns nothing: central_inference's trainers cost (almost) no time.
class NullLearner final : public concord::algos::OnPolicyLearner {
 public:
  NullLearner(int64_t rollout_length, const concord::nn::ActorCriticConfig& network, int64_t sleep_us,
              torch::Device device = torch::kCPU)
      : rollout_length_(rollout_length), sleep_us_(sleep_us), model_(on_device(network, device)) {}
  concord::algos::Metrics update(const concord::algos::Rollout&, double) override {
    if (sleep_us_ > 0) std::this_thread::sleep_for(std::chrono::microseconds(sleep_us_));
    return {};
  }
  concord::nn::ActorCritic model() override { return model_; }
  int64_t rollout_length() const override { return rollout_length_; }
  concord::nn::FlatParameters& flat_parameters() override { return parameters_; }
  int64_t gradient_steps_per_update() const override { return 1; }
  std::unique_ptr<concord::algos::OnPolicyLearner> make_shared_replica() override { return nullptr; }
  // It learns nothing, so it takes any lag: the runs below keep agents collecting while it "trains".
  bool corrects_policy_lag() const override { return true; }
  void save(concord::core::Checkpoint&) const override {}
  void load(const concord::core::Checkpoint&) override {}

 private:
  static concord::nn::ActorCritic on_device(const concord::nn::ActorCriticConfig& network, torch::Device device) {
    concord::nn::ActorCritic model(network);
    model->to(device);
    return model;
  }

  int64_t rollout_length_;
  int64_t sleep_us_;
  concord::nn::ActorCritic model_;
  concord::nn::FlatParameters parameters_{*model_};
};

// What the agents step and the network they act with.
struct Workload {
  std::string label;
  std::string env_id;
  concord::nn::ActorCriticConfig network;
};

Workload cartpole_workload(int64_t width) {
  return {std::to_string(width) + "x" + std::to_string(width) + " MLP, CartPole-v1", "CartPole-v1",
          cartpole_network(width)};
}

// MinAtar's reference network (one 3x3 convolution, 16 channels, 128 units) as one shared torso,
// on MinAtar Breakout's uint8 [10, 10, 4] grids.
Workload minatar_workload() {
  concord::nn::ActorCriticConfig network;
  network.obs_shape = {10, 10, 4};
  network.action_dim = 3;
  network.torso = "grid_cnn";
  network.shared_torso = true;
  return {"grid CNN, MinAtar/Breakout-v1", "MinAtar/Breakout-v1", network};
}

// MinAtar Breakout drawn as Atari-sized frames, for a network of GA3C's size: each grid cell of
// the [10, 10, 4] observation becomes an 8x8 block (0 or 255) of a [4, 84, 84] uint8 frame, with
// a 2-pixel border. The game and its costs are Breakout's; the frame is what the network sees.
class Breakout84 final : public concord::envs::ByteEnv {
 public:
  static constexpr char kId[] = "bench/MinAtarBreakout84-v0";
  static constexpr int64_t kSize = 84;
  static constexpr int64_t kCell = 8;
  static constexpr int64_t kBorder = 2;

  Breakout84() : Breakout84(concord::envs::make_env("MinAtar/Breakout-v1")) {}

 private:
  explicit Breakout84(std::unique_ptr<concord::envs::Env> inner)
      : concord::envs::ByteEnv(spec_of(*inner)),
        inner_(std::move(inner)),
        grid_(inner_->spec().observation_space.byte_size()) {}

  static concord::envs::EnvSpec spec_of(const concord::envs::Env& inner) {
    const concord::envs::Space& grid = inner.spec().observation_space;
    // No time limit of its own: the inner env truncates its episodes.
    return concord::envs::EnvSpec{
        kId,
        concord::envs::Space::box({grid.shape().at(2), kSize, kSize}, 0.0f, 255.0f, concord::envs::Dtype::kUInt8),
        inner.spec().action_space,
        0,
        std::nullopt,
        false};
  }

  void reset_state(uint8_t* observation) override {
    inner_->reset(reset_seed(), grid_.data());
    draw(observation);
  }
  concord::envs::StepResult step_state(const concord::envs::Action& action, uint8_t* observation) override {
    const concord::envs::StepResult result = inner_->step(action, grid_.data());
    draw(observation);
    return result;
  }
  // grid_ is [H, W, C] (channel last); the frame is [C, 84, 84].
  void draw(uint8_t* frame) const {
    const std::vector<int64_t>& shape = inner_->spec().observation_space.shape();
    const int64_t height = shape[0], width = shape[1], channels = shape[2];
    std::fill(frame, frame + channels * kSize * kSize, uint8_t{0});
    for (int64_t y = 0; y < height; ++y) {
      for (int64_t x = 0; x < width; ++x) {
        for (int64_t c = 0; c < channels; ++c) {
          if (grid_[static_cast<size_t>((y * width + x) * channels + c)] == 0) continue;
          for (int64_t dy = 0; dy < kCell; ++dy) {
            uint8_t* row = frame + (c * kSize + kBorder + y * kCell + dy) * kSize + kBorder + x * kCell;
            std::fill(row, row + kCell, uint8_t{255});
          }
        }
      }
    }
  }

  std::unique_ptr<concord::envs::Env> inner_;
  std::vector<uint8_t> grid_;
};

// GA3C's larger network (the Nature-DQN CNN, as one shared torso) on Breakout84's frames.
Workload large_workload() {
  if (!concord::envs::Registry::global().contains(Breakout84::kId)) {
    concord::envs::Registry::global().add(Breakout84::kId, [] { return std::make_unique<Breakout84>(); });
  }
  concord::nn::ActorCriticConfig network;
  network.obs_shape = {4, Breakout84::kSize, Breakout84::kSize};
  network.action_dim = 3;
  network.torso = "cnn";
  network.shared_torso = true;
  return {"Nature CNN, Breakout 4x84x84", Breakout84::kId, network};
}

concord::envs::VectorEnvConfig workload_envs(const Workload& workload, int num_envs) {
  concord::envs::VectorEnvConfig config;
  config.env_id = workload.env_id;
  config.num_envs = num_envs;
  config.seed = 1;
  return config;
}

// Runs the policy for `seconds` and returns the last update's metrics.
concord::algos::Metrics run_policy(const CentralInferenceConfig& config, concord::algos::OnPolicyLearner& learner,
                                   const concord::envs::VectorEnvConfig& envs, double seconds,
                                   torch::Device device = torch::kCPU) {
  CentralInferencePolicy policy(config, envs, learner, device);
  concord::policies::TrainingState state;
  concord::algos::Metrics last;
  concord::policies::TrainingCallbacks callbacks;
  callbacks.on_update = [&](const concord::policies::TrainingState&, const concord::algos::Metrics& metrics,
                            const concord::core::EpisodeStats&) { last = metrics; };
  const auto start = Clock::now();
  callbacks.should_stop = [&] { return std::chrono::duration<double>(Clock::now() - start).count() > seconds; };
  policy.train(state, int64_t{1} << 50, int64_t{1} << 50, callbacks);
  return last;
}

concord::algos::Metrics central_metrics(const Workload& workload, int agents, double seconds, torch::Device device) {
  NullLearner learner(5, workload.network, 0, device);
  CentralInferenceConfig config;
  config.agents = agents;
  config.training_batch = 1;
  config.max_policy_lag = 1;  // GA3C's arrangement: agents collect while the learner trains
  config.queue_capacity = 2 * agents;
  return run_policy(config, learner, workload_envs(workload, agents), seconds, device);
}

// One act() at batch 1 and at `rows` on `device`, on a thread that then ends: a GPU's lazily
// loaded kernels and its library handles (which a finished thread returns to LibTorch's pools), and
// the CPU's convolution kernels, are ready before any clock starts.
void warm_up(const Workload& workload, int rows, torch::Device device) {
  concord::core::torch_thread([&] {
    concord::nn::ActorCritic model(workload.network);
    model->to(device);
    c10::InferenceMode inference;
    for (const int64_t batch : {int64_t{1}, static_cast<int64_t>(rows)}) {
      std::vector<int64_t> shape = {batch};
      shape.insert(shape.end(), workload.network.obs_shape.begin(), workload.network.obs_shape.end());
      model->act(torch::zeros(shape, torch::kUInt8).to(device)).action.to(torch::kCPU);
    }
  }).join();
}

double own_inference_pps(const Workload& workload, int agents, double seconds, torch::Device device) {
  const concord::nn::ActorCritic reference(workload.network);
  std::atomic<int64_t> predictions{0};
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int a = 0; a < agents; ++a) {
    auto model = std::dynamic_pointer_cast<concord::nn::ActorCriticImpl>(reference->clone());
    model->to(device);
    threads.push_back(concord::core::torch_thread([&, model, a] {
      concord::envs::VectorEnvConfig config = workload_envs(workload, 1);
      config.seed = static_cast<uint64_t>(a);
      concord::envs::VectorEnv env(config);
      concord::envs::Batch batch = env.reset();
      c10::InferenceMode inference;
      auto predict_and_step = [&] {
        const torch::Tensor observation =
            concord::policies::runtime::observation_view(env, batch.observations, 1).to(device);
        const torch::Tensor action = model->act(observation).action.to(torch::kCPU).contiguous();
        batch = env.step(action.data_ptr<int64_t>());
      };
      predict_and_step();  // this thread's first call (a GPU's per-thread set-up) is not timed
      ++ready;
      while (!go.load()) std::this_thread::yield();
      int64_t count = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        predict_and_step();
        ++count;
      }
      predictions += count;
    }));
  }
  while (ready.load() < agents) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  go = true;
  const auto start = Clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (std::thread& thread : threads) thread.join();
  return static_cast<double>(predictions.load()) / std::chrono::duration<double>(Clock::now() - start).count();
}

void sweep(double seconds) {
  // A learner update that takes 2 ms, so trainers and predictors compete for the cores.
  std::printf(
      "\nTPS (trainings/s) of static configurations vs dynamic adjustment, 64-64 net, 32 envs, T = 5,\n"
      "training_batch 4, a learner update that sleeps 2 ms, %.0f s each\n\n",
      seconds);
  std::printf("| agents | predictors | trainers | TPS | PPS |\n|---:|---:|---:|---:|---:|\n");
  for (const auto& [agents, predictors, trainers] :
       std::vector<std::tuple<int, int, int>>{{2, 1, 1}, {4, 1, 1}, {8, 1, 1}, {8, 2, 1}, {8, 1, 2}, {16, 2, 2}}) {
    NullLearner learner(5, cartpole_network(64), 2000);
    CentralInferenceConfig config;
    config.agents = agents;
    config.predictors = predictors;
    config.trainers = trainers;
    config.max_policy_lag = 1;
    const auto metrics = run_policy(config, learner, workload_envs(cartpole_workload(64), 32), seconds);
    std::printf("| %d | %d | %d | %.1f | %.0f |\n", agents, predictors, trainers, metrics.at("charts/TPS"),
                metrics.at("charts/PPS"));
  }
  NullLearner learner(5, cartpole_network(64), 2000);
  CentralInferenceConfig config;
  config.agents = 16;
  config.predictors = 2;
  config.trainers = 2;
  config.max_policy_lag = 1;
  config.dynamic_adjustment = true;
  config.adjust_interval_seconds = 1.0;
  const auto metrics = run_policy(config, learner, workload_envs(cartpole_workload(64), 32), 3.0 * seconds);
  std::printf("| dynamic (max 16, 2, 2), settled at %.0f, %.0f, %.0f | | | %.1f | %.0f |\n",
              metrics.at("charts/active_agents"), metrics.at("charts/active_predictors"),
              metrics.at("charts/active_trainers"), metrics.at("charts/TPS"), metrics.at("charts/PPS"));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("ga3c_inference: PPS of central batched inference vs per-agent batch-1 inference");
  std::vector<int> agent_counts = {8, 32, 64};
  std::vector<int64_t> widths = {64, 256};
  double seconds = 3.0;
  bool with_sweep = false;
  bool minatar = false;
  bool large = false;
  std::string device_name = "cpu";
  std::string own_device_name;
  app.add_option("--agents", agent_counts, "Agent counts to measure");
  app.add_option("--widths", widths, "Hidden width of the 2-layer MLPs");
  app.add_option("--seconds", seconds, "Wall time per cell");
  app.add_flag("--minatar", minatar, "Measure MinAtar Breakout with the grid CNN instead of CartPole's MLPs");
  app.add_flag("--large", large,
               "Measure GA3C's larger network (Nature CNN) on MinAtar Breakout drawn as 4x84x84 frames "
               "instead of CartPole's MLPs (with --minatar: both)");
  app.add_option("--device", device_name, "Device of both columns' networks: cpu, cuda, cuda:N")->capture_default_str();
  app.add_option("--own-device", own_device_name, "Device of the per-agent column alone (default: --device)");
  app.add_flag("--sweep", with_sweep, "Also compare static thread configurations with dynamic adjustment (TPS)");
  CLI11_PARSE(app, argc, argv);
  torch::set_num_threads(1);
  torch::Device device = torch::kCPU;
  torch::Device own_device = torch::kCPU;
  try {
    device = concord::core::resolve_device(device_name);
    own_device = own_device_name.empty() ? device : concord::core::resolve_device(own_device_name);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "ga3c_inference: error: %s\n", error.what());
    return 1;
  }

  std::vector<Workload> workloads;
  if (minatar) workloads.push_back(minatar_workload());
  if (large) workloads.push_back(large_workload());
  if (!minatar && !large) {
    for (int64_t width : widths) workloads.push_back(cartpole_workload(width));
  }
  std::printf("PPS, one env per agent, %.1f s per cell; machine: %u hardware threads, load average at start %s\n",
              seconds, std::thread::hardware_concurrency(), concord::bench::load_average().c_str());
  std::printf("devices: central batched on %s, own batch-1 on %s\n\n", device.str().c_str(), own_device.str().c_str());
  std::printf(
      "| workload | agents | central batched PPS | mean prediction batch | own batch-1 PPS (A3C) | ratio |\n"
      "|---|---:|---:|---:|---:|---:|\n");
  for (const Workload& workload : workloads) {
    const int most_agents = agent_counts.empty() ? 1 : *std::max_element(agent_counts.begin(), agent_counts.end());
    warm_up(workload, most_agents, device);
    if (own_device != device) warm_up(workload, 1, own_device);
    for (int agents : agent_counts) {
      concord::algos::Metrics metrics = central_metrics(workload, agents, seconds, device);
      // No update finished within the time (a slow network, a very short cell): no central figure.
      const double central = metrics.count("charts/PPS") ? metrics.at("charts/PPS") : 0.0;
      const double own = own_inference_pps(workload, agents, seconds, own_device);
      std::printf("| %s | %d | %.0f | %.1f | %.0f | %.2fx |\n", workload.label.c_str(), agents, central,
                  metrics["charts/prediction_batch_size"], own, central / own);
      std::fflush(stdout);
    }
  }
  if (with_sweep) sweep(seconds);
  return 0;
}
