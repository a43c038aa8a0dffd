// env_throughput: environment steps per second of the vector engine.
//
// For each environment and num_envs it measures, for a fixed wall time per cell:
//   naive   a plain serial loop over N single Env objects that allocates an observation buffer
//           per env per step (the naive way; the same-run baseline);
//   sync    VectorEnv step() over all N envs, for each thread count;
//   async   VectorEnv recv()/send() with batch_size = N / 2, for each thread count.
// Random actions for the whole batch are drawn every step and their cost is included.

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "concord/core/rng.h"
#include "concord/envs/random_actions.h"
#include "concord/envs/registry.h"
#include "concord/envs/vector_env.h"

namespace {

using concord::envs::Action;
using concord::envs::Batch;
using concord::envs::Env;
using concord::envs::VectorEnv;
using concord::envs::VectorEnvConfig;
using Clock = std::chrono::steady_clock;

// Holds one batch of random actions for a space, redrawn by next().
class ActionBatch {
 public:
  ActionBatch(const concord::envs::Space& space, int64_t count, uint64_t seed)
      : space_(space),
        rng_(seed),
        discrete_(space.is_discrete() ? count : 0),
        box_(space.is_discrete() ? 0 : count * space.flat_size()) {}

  void next(int64_t count) {
    if (space_.is_discrete()) {
      concord::envs::sample_actions(space_, rng_, count, discrete_.data());
    } else {
      concord::envs::sample_actions(space_, rng_, count, box_.data());
    }
  }
  bool discrete() const { return space_.is_discrete(); }
  const int64_t* indices() const { return discrete_.data(); }
  const float* values() const { return box_.data(); }

 private:
  const concord::envs::Space& space_;
  concord::core::Rng rng_;
  std::vector<int64_t> discrete_;
  std::vector<float> box_;
};

// Calls `step` (which returns how many env steps it took) until `seconds` have passed, after a
// short warm-up; returns env steps per second.
template <typename Step>
double measure(double seconds, Step&& step) {
  const auto warmup_end = Clock::now() + std::chrono::duration<double>(std::min(0.1, seconds / 5));
  while (Clock::now() < warmup_end) step();
  int64_t steps = 0;
  const auto start = Clock::now();
  const auto end = start + std::chrono::duration<double>(seconds);
  auto now = start;
  while (now < end) {
    steps += step();
    now = Clock::now();
  }
  return static_cast<double>(steps) / std::chrono::duration<double>(now - start).count();
}

double naive_serial(const std::string& id, int num_envs, double seconds) {
  std::vector<std::unique_ptr<Env>> envs;
  for (int i = 0; i < num_envs; ++i) {
    envs.push_back(concord::envs::make_env(id));
    std::vector<unsigned char> obs(static_cast<size_t>(envs.back()->spec().observation_space.byte_size()));
    envs.back()->reset(concord::core::derive_seed(1, static_cast<uint64_t>(i)), obs.data());
  }
  const auto& space = envs.front()->spec().action_space;
  ActionBatch actions(space, num_envs, 7);
  const int64_t obs_bytes = envs.front()->spec().observation_space.byte_size();
  const int64_t act_dim = space.flat_size();
  std::vector<float> rewards(static_cast<size_t>(num_envs));
  return measure(seconds, [&] {
    actions.next(num_envs);
    for (int i = 0; i < num_envs; ++i) {
      std::vector<unsigned char> obs(static_cast<size_t>(obs_bytes));
      Action action;
      if (actions.discrete()) {
        action.index = actions.indices()[i];
      } else {
        action.values = actions.values() + i * act_dim;
      }
      const auto result = envs[static_cast<size_t>(i)]->step(action, obs.data());
      rewards[static_cast<size_t>(i)] = result.reward;
      if (result.terminated || result.truncated) {
        envs[static_cast<size_t>(i)]->reset(std::nullopt, obs.data());
      }
    }
    return int64_t{num_envs};
  });
}

double vector_sync(const std::string& id, int num_envs, int threads, double seconds) {
  VectorEnvConfig config;
  config.env_id = id;
  config.num_envs = num_envs;
  config.num_threads = threads;
  config.seed = 1;
  VectorEnv env(config);
  ActionBatch actions(env.spec().action_space, num_envs, 7);
  env.reset();
  return measure(seconds, [&] {
    actions.next(num_envs);
    if (actions.discrete()) {
      env.step(actions.indices());
    } else {
      env.step(actions.values());
    }
    return int64_t{num_envs};
  });
}

double vector_async(const std::string& id, int num_envs, int threads, double seconds) {
  VectorEnvConfig config;
  config.env_id = id;
  config.num_envs = num_envs;
  config.num_threads = threads;
  config.batch_size = std::max(1, num_envs / 2);
  config.seed = 1;
  VectorEnv env(config);
  ActionBatch actions(env.spec().action_space, config.batch_size, 7);
  env.async_reset();
  return measure(seconds, [&] {
    const Batch batch = env.recv();
    actions.next(batch.size);
    if (actions.discrete()) {
      env.send(actions.indices(), batch.env_ids, batch.size);
    } else {
      env.send(actions.values(), batch.env_ids, batch.size);
    }
    return batch.size;
  });
}

std::string load_average() {
  std::ifstream file("/proc/loadavg");
  std::string one, five, fifteen;
  file >> one >> five >> fifteen;
  return one.empty() ? "unknown" : one + " " + five + " " + fifteen;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Env steps per second of Concord's vector engine, with naive and quoted baselines"};
  double seconds = 1.0;
  std::vector<std::string> env_ids = {"CartPole-v1", "Pendulum-v1"};
  std::vector<int> num_envs_list = {8, 64, 256, 1024, 4096};
  std::vector<int> threads_list = {1, 2};
  bool skip_async = false;
  app.add_option("--seconds", seconds, "Wall time measured per cell")->check(CLI::PositiveNumber);
  app.add_option("--envs", env_ids, "Environment ids");
  app.add_option("--num-envs", num_envs_list, "Batch sizes (num_envs)");
  app.add_option("--threads", threads_list, "Thread counts (the calling thread included)");
  app.add_flag("--skip-async", skip_async, "Measure sync mode only");
  CLI11_PARSE(app, argc, argv);

  std::printf(
      "env_throughput: env steps per second, in millions (M/s); %.2f s per cell, random "
      "actions drawn every step included\n",
      seconds);
  std::printf("machine: %u hardware threads, load average at start %s\n", std::thread::hardware_concurrency(),
              load_average().c_str());
  std::printf(
      "async: batch_size = num_envs / 2; naive: serial loop over single envs with an "
      "observation buffer allocated per env per step; obs B: bytes one stored observation takes\n\n");

  std::printf("%-26s %6s %9s %8s", "env", "obs B", "num_envs", "naive");
  for (int t : threads_list) std::printf("  sync-%dT", t);
  if (!skip_async) {
    for (int t : threads_list) std::printf(" async-%dT", t);
  }
  std::printf("\n");
  for (const std::string& id : env_ids) {
    for (int n : num_envs_list) {
      std::printf("%-26s %6lld %9d %8.2f", id.c_str(),
                  static_cast<long long>(concord::envs::make_env(id)->spec().observation_space.byte_size()), n,
                  naive_serial(id, n, seconds) / 1e6);
      std::fflush(stdout);
      for (int t : threads_list) {
        std::printf(" %8.2f", vector_sync(id, n, t, seconds) / 1e6);
        std::fflush(stdout);
      }
      if (!skip_async) {
        for (int t : threads_list) {
          std::printf(" %8.2f", n >= 2 ? vector_async(id, n, t, seconds) / 1e6 : 0.0);
          std::fflush(stdout);
        }
      }
      std::printf("\n");
    }
  }
  std::printf(
      "\nbaseline (quoted, not measured here): Gymnasium SyncVectorEnv, CartPole-v1: "
      "~0.11 M steps/s on this machine\n");
  std::printf("load average at end: %s\n", load_average().c_str());
  return 0;
}
