// data_parallel: training throughput (samples/s) of Synkhronos-style synchronous SGD
// (parallel::SynchronousSgd over comm::ThreadGroup, gradients averaged by the registry's bucketed
// `allreduce`) at W = 1, 2, ... worker threads, each with one LibTorch thread, beside the baseline
// of a plain serial training loop on one thread (no slicing, no communication). The batch comes
// as an index batch from rank 0 over MNIST images resident on every worker (indexed input), so
// only indices travel. Each configuration trains the same global batch for a fixed number of
// steps after a warm-up.
//
//   data_parallel                               cnn, batch 256, workers 1 and 2
//   data_parallel --workers 1,2,4,8 --steps 50  on a larger machine
//   data_parallel --quick                       a smoke run

#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include <torch/torch.h>
#include <CLI/CLI.hpp>

#include "concord/comm/thread_group.h"
#include "concord/core/config.h"
#include "concord/core/timer.h"
#include "concord/data/mnist.h"
#include "concord/nn/flat_parameters.h"
#include "concord/parallel/synchronous_sgd.h"
#include "concord/supervised/classifier.h"
#include "concord/sync/sync_registry.h"

namespace {

namespace parallel = concord::parallel;

struct Options {
  std::string model = "cnn";
  int64_t batch = 256;
  int64_t steps = 20;
  int64_t warmup = 3;
  std::vector<int> workers = {1, 2};
  bool quick = false;
};

torch::nn::Sequential seeded_model(const std::string& name) {
  torch::manual_seed(1);
  return concord::supervised::make_classifier(name);
}

torch::Tensor batch_indices(int64_t step, int64_t batch, int64_t rows) {
  return torch::arange(step * batch, (step + 1) * batch, torch::kInt64).remainder(rows);
}

// The baseline: forward, loss, backward and an SGD step on one thread.
double serial_samples_per_second(const Options& options, const concord::data::LabelledData& train) {
  auto model = seeded_model(options.model);
  concord::nn::FlatParameters parameters(*model);
  torch::optim::SGD optimizer({parameters.values()}, 0.05);
  concord::core::Stopwatch clock;
  for (int64_t step = 0; step < options.warmup + options.steps; ++step) {
    if (step == options.warmup) clock.restart();
    const auto batch = train.select(batch_indices(step, options.batch, train.size()));
    parameters.zero_grad();
    torch::nn::functional::cross_entropy(model->forward(batch.images), batch.labels).backward();
    optimizer.step();
  }
  return static_cast<double>(options.steps * options.batch) / clock.elapsed_seconds();
}

double parallel_samples_per_second(const Options& options, const concord::data::LabelledData& train, int workers) {
  concord::comm::ThreadGroup group(workers, std::chrono::seconds(120));
  concord::core::ConfigSchema schema;
  concord::sync::declare_sync_keys(schema);
  const concord::core::Config config(schema);
  std::vector<torch::nn::Sequential> models;
  for (int rank = 0; rank < workers; ++rank) models.push_back(seeded_model(options.model));
  double seconds = 0.0;
  std::vector<std::thread> threads;
  for (int rank = 0; rank < workers; ++rank) {
    threads.emplace_back([&, rank, communicator = group.communicator(rank)] {
      auto& model = models[static_cast<size_t>(rank)];
      concord::nn::FlatParameters parameters(*model);
      torch::optim::SGD optimizer({parameters.values()}, 0.05);
      auto strategy = concord::sync::make_sync_strategy("allreduce", config, *communicator);
      parallel::SynchronousSgd sgd(*communicator, *model, parameters, optimizer, *strategy,
                                   [&](const std::vector<torch::Tensor>& slice) {
                                     return torch::nn::functional::cross_entropy(model->forward(slice[0]), slice[1]);
                                   },
                                   {parallel::InputKind::kIndexed, parallel::InputKind::kIndexed});
      sgd.set_resident(0, train.images);
      sgd.set_resident(1, train.labels);
      concord::core::Stopwatch clock;
      for (int64_t step = 0; step < options.warmup + options.steps; ++step) {
        if (step == options.warmup) clock.restart();
        if (rank == 0) {
          const torch::Tensor indices = batch_indices(step, options.batch, train.size());
          sgd.step({indices, indices});
        } else {
          sgd.step({});
        }
      }
      if (rank == 0) seconds = clock.elapsed_seconds();
    });
  }
  for (auto& thread : threads) thread.join();
  return static_cast<double>(options.steps * options.batch) / seconds;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Data-parallel synchronous SGD throughput"};
  Options options;
  app.add_option("--model", options.model, "mlp or cnn");
  app.add_option("--batch", options.batch, "Global batch (rows per step over all workers)");
  app.add_option("--steps", options.steps, "Timed steps per configuration");
  app.add_option("--workers", options.workers, "Worker counts, e.g. 1,2,4")->delimiter(',');
  app.add_flag("--quick", options.quick, "Smoke run: 2 steps, 1 warm-up");
  CLI11_PARSE(app, argc, argv);
  if (options.quick) {
    options.steps = 2;
    options.warmup = 1;
  }
  try {
    torch::set_num_threads(1);
    const auto train = concord::data::load_mnist(concord::data::default_data_dir()).train;
    std::printf(
        "data_parallel: %s on MNIST, global batch %lld, %lld timed steps after %lld warm-up, 1 LibTorch "
        "thread per worker, %u hardware threads\n\n",
        options.model.c_str(), static_cast<long long>(options.batch), static_cast<long long>(options.steps),
        static_cast<long long>(options.warmup), std::thread::hardware_concurrency());
    const double serial = serial_samples_per_second(options, train);
    std::printf("%-28s %12s %14s %12s\n", "configuration", "samples/s", "vs serial", "vs W=1");
    std::printf("%-28s %12.0f %14s %12s\n", "serial loop (baseline)", serial, "1.00x", "-");
    double one_worker = 0.0;
    for (const int workers : options.workers) {
      const double rate = parallel_samples_per_second(options, train, workers);
      if (workers == 1) one_worker = rate;
      const std::string label = "synchronous SGD, W=" + std::to_string(workers);
      std::printf("%-28s %12.0f %13.2fx %11s\n", label.c_str(), rate, rate / serial,
                  one_worker > 0 ? (std::to_string(rate / one_worker).substr(0, 4) + "x").c_str() : "-");
      std::fflush(stdout);
    }
  } catch (const std::exception& error) {
    std::fprintf(stderr, "data_parallel: error: %s\n", error.what());
    return 1;
  }
  return 0;
}
