// allreduce: what Concord's communication layer costs over raw torch c10d Gloo, 1 KB to 64 MB.
//
// For each payload size, with N ranks (processes), rank 0 reports the median over repetitions of:
//   (a) raw:      c10d::ProcessGroupGloo::allreduce of one float tensor of that size, on a process
//                 group this program builds itself from a TCPStore (the baseline);
//   (b) comm:     comm::Communicator::allreduce of the same tensor (comm::connect's Gloo group);
//   (c) bucketed: the cost the optimiser step pays for sync::GradientAllreduce (DDP-style buckets,
//                 default sync.allreduce.bucket_kb = 1024) on a model whose flat gradient has that
//                 many bytes: time of backward + synchronize_gradients() minus backward alone
//                 (the same model under NoSync). Overlap with backward can make it cheaper than (a).
// Target (cluster issue): (c) at most 1.25x (a). The four measurements of one repetition run
// back to back, each after a barrier, so a change in the machine's load hits them alike.
//
//   allreduce                    2 ranks on loopback, every size (the program starts its ranks)
//   allreduce --ranks 4 --repeats 30
//   allreduce --quick            1 KB to 256 KB, few repetitions: the ctest smoke run
//   RANK=.. WORLD_SIZE=.. MASTER_ADDR=.. MASTER_PORT=.. allreduce   one rank, from a launcher

#include <torch/torch.h>
#include <CLI/CLI.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "concord/comm/launch_environment.h"
#include "concord/core/timer.h"
#include "concord/nn/flat_parameters.h"
#include "concord/sync/gradient_allreduce.h"
#include "concord/sync/sync_strategy.h"
#include "self_launch.h"

namespace {

using concord::comm::Communicator;

struct Options {
  int ranks = 2;
  int repeats = 20;
  int warmup = 3;
  int batch = 32;
  int64_t bucket_kb = 1024;
  int torch_threads = 1;
  double timeout_seconds = 300.0;
  bool quick = false;
};

constexpr int64_t kKiB = 1024;
constexpr int64_t kMiB = 1024 * kKiB;
constexpr int kLayers = 4;
constexpr double kTarget = 1.25;

std::vector<int64_t> payload_sizes(bool quick) {
  if (quick) return {kKiB, 16 * kKiB, 256 * kKiB};
  return {kKiB, 16 * kKiB, 256 * kKiB, kMiB, 4 * kMiB, 16 * kMiB, 64 * kMiB};
}

std::string size_label(int64_t bytes) {
  return bytes >= kMiB ? std::to_string(bytes / kMiB) + " MB" : std::to_string(bytes / kKiB) + " KB";
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t middle = values.size() / 2;
  return values.size() % 2 == 1 ? values[middle] : 0.5 * (values[middle - 1] + values[middle]);
}

// The baseline's own Gloo process group: a second client of rank 0's rendezvous store (served
// since comm::connect), under a prefix of its own, on a device of its own. Nothing of Concord's
// sits between it and c10d.
c10::intrusive_ptr<c10d::ProcessGroupGloo> raw_gloo_group(const concord::comm::LaunchEnvironment& launch,
                                                          std::chrono::milliseconds timeout) {
  c10d::TCPStoreOptions store_options;
  store_options.port = static_cast<std::uint16_t>(launch.master_port);
  store_options.isServer = false;
  store_options.timeout = timeout;
  auto store = c10::make_intrusive<c10d::TCPStore>(launch.master_addr, store_options);
  auto options = c10d::ProcessGroupGloo::Options::create(timeout);
  const char* interface = std::getenv("GLOO_SOCKET_IFNAME");
  if (interface != nullptr && *interface != '\0') {
    options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(interface));
  } else if (launch.master_addr == "127.0.0.1" || launch.master_addr == "localhost") {
    options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
  } else {
    options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
  }
  options->threads = 2;  // as comm::connect's group, so that (a) and (b) differ only in Concord's layer
  return c10::make_intrusive<c10d::ProcessGroupGloo>(c10::make_intrusive<c10d::PrefixStore>("raw_baseline", store),
                                                     launch.rank, launch.world_size, options);
}

// kLayers square bias-free linear layers of width `width` with tanh between them: a flat
// gradient of kLayers * width^2 floats, whose backward produces the gradient layer by layer
// from the last, as a network's does, so buckets can overlap it.
struct LayerStackImpl : torch::nn::Module {
  explicit LayerStackImpl(int64_t width) {
    for (int i = 0; i < kLayers; ++i) {
      layers.push_back(register_module("layer" + std::to_string(i),
                                       torch::nn::Linear(torch::nn::LinearOptions(width, width).bias(false))));
    }
  }
  torch::Tensor forward(torch::Tensor x) {
    for (size_t i = 0; i < layers.size(); ++i) {
      x = layers[i]->forward(x);
      if (i + 1 < layers.size()) x = torch::tanh(x);
    }
    return x.pow(2).mean();
  }
  std::vector<torch::nn::Linear> layers;
};
TORCH_MODULE(LayerStack);

// A model, its flat parameters and the sync strategy attached to them.
struct Replica {
  Replica(int64_t width, std::unique_ptr<concord::sync::SyncStrategy> strategy)
      : model(width), parameters(*model), sync(std::move(strategy)) {
    sync->attach(parameters);
  }
  // Seconds of backward() + synchronize_gradients(); the forward pass is not timed.
  double timed_step(const torch::Tensor& input, Communicator& communicator) {
    parameters.zero_grad();
    const torch::Tensor loss = model->forward(input);
    communicator.barrier();
    const concord::core::Stopwatch clock;
    loss.backward();
    sync->synchronize_gradients();
    return clock.elapsed_seconds();
  }
  LayerStack model;
  concord::nn::FlatParameters parameters;
  std::unique_ptr<concord::sync::SyncStrategy> sync;
};

struct SizeResult {
  int64_t bytes = 0;
  double raw_seconds = 0.0;
  double comm_seconds = 0.0;
  double backward_seconds = 0.0;
  double synced_seconds = 0.0;
  size_t buckets = 0;
};

SizeResult measure(int64_t bytes, const Options& options, Communicator& communicator, c10d::ProcessGroupGloo& raw) {
  const int64_t floats = bytes / static_cast<int64_t>(sizeof(float));
  const int64_t width = static_cast<int64_t>(std::lround(std::sqrt(static_cast<double>(floats / kLayers))));
  if (kLayers * width * width != floats) {
    throw std::logic_error("payload " + std::to_string(bytes) + " is not " + std::to_string(kLayers) +
                           " equal squares of floats");
  }

  const torch::Tensor payload = torch::ones({floats});
  std::vector<torch::Tensor> raw_tensors{payload};
  Replica unsynchronised(width, std::make_unique<concord::sync::NoSync>());
  auto allreduce = std::make_unique<concord::sync::GradientAllreduce>(communicator, options.bucket_kb * kKiB);
  concord::sync::GradientAllreduce& bucketed_sync = *allreduce;
  Replica synchronised(width, std::move(allreduce));
  const torch::Tensor input = torch::randn({options.batch, width});

  std::vector<double> raw_times, comm_times, backward_times, synced_times;
  // Each measurement starts right after a barrier on its own process group: a group whose threads
  // were idle pays for waking them (milliseconds on a loaded machine), and that must not fall on
  // one side only.
  const auto time_raw = [&] {
    raw.barrier()->wait();
    const concord::core::Stopwatch clock;
    raw.allreduce(raw_tensors)->wait();
    return clock.elapsed_seconds();
  };
  const auto time_comm = [&] {
    communicator.barrier();
    const concord::core::Stopwatch clock;
    communicator.allreduce(payload);
    return clock.elapsed_seconds();
  };
  for (int repetition = 0; repetition < options.warmup + options.repeats; ++repetition) {
    // Odd repetitions swap the order within each pair, so that whatever the first of two
    // back-to-back measurements pays (or leaves behind) is shared evenly.
    const bool swap = repetition % 2 == 1;
    double raw_time = 0.0, comm_time = 0.0, backward = 0.0, synced = 0.0;
    if (swap) {
      comm_time = time_comm();
      raw_time = time_raw();
      synced = synchronised.timed_step(input, communicator);
      backward = unsynchronised.timed_step(input, communicator);
    } else {
      raw_time = time_raw();
      comm_time = time_comm();
      backward = unsynchronised.timed_step(input, communicator);
      synced = synchronised.timed_step(input, communicator);
    }
    if (repetition < options.warmup) continue;
    raw_times.push_back(raw_time);
    comm_times.push_back(comm_time);
    backward_times.push_back(backward);
    synced_times.push_back(synced);
  }
  SizeResult result;
  result.bytes = bytes;
  result.raw_seconds = median(raw_times);
  result.comm_seconds = median(comm_times);
  result.backward_seconds = median(backward_times);
  result.synced_seconds = median(synced_times);
  result.buckets = bucketed_sync.buckets().size();
  return result;
}

double gigabytes_per_second(int64_t bytes, double seconds) {
  return seconds > 0.0 ? static_cast<double>(bytes) / seconds / 1e9 : 0.0;
}

int run_rank(const Options& options) {
  torch::set_num_threads(options.torch_threads);
  torch::manual_seed(1);
  const concord::comm::LaunchEnvironment launch = concord::comm::LaunchEnvironment::from_environment();
  concord::comm::ConnectOptions connect_options;
  connect_options.timeout = std::chrono::milliseconds(static_cast<int64_t>(options.timeout_seconds * 1000.0));
  std::unique_ptr<Communicator> communicator = concord::comm::connect(launch, connect_options);
  const auto raw = raw_gloo_group(launch, connect_options.timeout);
  const bool report = communicator->rank() == 0;

  if (report) {
    std::printf(
        "allreduce: %d ranks (%s, %s:%d), float32 sum, median of %d repetitions after %d warm-up, rank 0's clock\n",
        communicator->world_size(), communicator->backend().c_str(), launch.master_addr.c_str(), launch.master_port,
        options.repeats, options.warmup);
    std::printf(
        "(a) raw: c10d ProcessGroupGloo::allreduce; (b) comm: Communicator::allreduce; (c) bucketed: "
        "GradientAllreduce (bucket %lld KiB) on %d bias-free linear layers, batch %d: (c) = bwd+sync - bwd, "
        "the time backward + synchronize_gradients() takes beyond backward alone\nGB/s = payload bytes / time; "
        "target (c)/(a) <= %.2f\n\n",
        static_cast<long long>(options.bucket_kb), kLayers, options.batch, kTarget);
    std::printf("%7s %9s %7s %9s %7s %7s %7s %9s %9s %9s %7s %7s %s\n", "size", "(a) ms", "GB/s", "(b) ms", "GB/s",
                "(b)/(a)", "buckets", "bwd ms", "bwd+sync", "(c) ms", "GB/s", "(c)/(a)", "target");
    std::fflush(stdout);
  }
  for (const int64_t bytes : payload_sizes(options.quick)) {
    const SizeResult r = measure(bytes, options, *communicator, *raw);
    if (!report) continue;
    const double sync_cost = r.synced_seconds - r.backward_seconds;
    const double comm_ratio = r.comm_seconds / r.raw_seconds;
    const double bucketed_ratio = sync_cost / r.raw_seconds;
    std::printf("%7s %9.3f %7.3f %9.3f %7.3f %6.2fx %7zu %9.3f %9.3f %9.3f %7.3f %6.2fx %s\n",
                size_label(bytes).c_str(), r.raw_seconds * 1e3, gigabytes_per_second(bytes, r.raw_seconds),
                r.comm_seconds * 1e3, gigabytes_per_second(bytes, r.comm_seconds), comm_ratio, r.buckets,
                r.backward_seconds * 1e3, r.synced_seconds * 1e3, sync_cost * 1e3,
                gigabytes_per_second(bytes, sync_cost), bucketed_ratio, bucketed_ratio <= kTarget ? "met" : "NOT met");
    std::fflush(stdout);
  }
  communicator->barrier();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"allreduce: Concord's Communicator and bucketed gradient sync vs raw c10d Gloo allreduce"};
  Options options;
  app.add_option("--ranks", options.ranks, "Ranks to start on loopback (ignored when started as a rank)")
      ->check(CLI::Range(2, 64));
  app.add_option("--repeats", options.repeats, "Timed repetitions per size (the median is reported)")
      ->check(CLI::Range(1, 10000));
  app.add_option("--warmup", options.warmup, "Untimed repetitions per size first")->check(CLI::Range(0, 1000));
  app.add_option("--batch", options.batch, "Rows of the bucketed model's input (its backward's work)")
      ->check(CLI::Range(1, 65536));
  app.add_option("--bucket-kb", options.bucket_kb, "GradientAllreduce bucket size in KiB (sync.allreduce.bucket_kb)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 30));
  app.add_option("--torch-threads", options.torch_threads, "LibTorch threads per rank")->check(CLI::Range(1, 256));
  app.add_option("--timeout", options.timeout_seconds, "Seconds any one operation (and rendezvous) may take")
      ->check(CLI::PositiveNumber);
  app.add_flag("--quick", options.quick, "Smoke run: 1 KB to 256 KB, 3 repetitions after 1 warm-up");
  CLI11_PARSE(app, argc, argv);
  if (options.quick) {
    if (app.count("--repeats") == 0) options.repeats = 3;
    if (app.count("--warmup") == 0) options.warmup = 1;
  }

  try {
    if (concord::bench::started_as_rank()) return run_rank(options);
    const std::vector<std::string> arguments(argv + 1, argv + argc);
    const auto outcomes =
        concord::bench::run_self_as_ranks(options.ranks, arguments, /*echo_rank0=*/true,
                                          std::chrono::seconds(static_cast<int64_t>(options.timeout_seconds) * 4 + 60));
    return concord::bench::report_rank_failures(outcomes) ? 0 : 1;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "allreduce: error: %s\n", error.what());
    return 1;
  }
}
