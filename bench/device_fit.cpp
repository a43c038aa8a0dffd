// device_fit: training throughput (samples/s, steps/s) of one `concord fit` classifier on one
// device: data_parallel's serial loop (select the batch's rows, forward, cross-entropy, backward,
// one SGD step on the flat parameters) with the training set resident on the device, so that a
// step moves nothing but its index batch. It is the GPU side of issue 53's "ResNet-20: one GPU
// against 16 CPU workers"; the CPU workers are bench/data_parallel's rows at the same global batch.
//
//   device_fit --device cuda                      ResNet-20 on Fashion-MNIST, batch 256, 20 steps
//   device_fit --device cpu --torch-threads 16    the same loop on the CPU's intra-op threads
//
// Ends with one machine-readable line (bench/device_suite.sh reads it):
//   concord-device-fit: <device> <batch> <steps> <seconds> <samples/s> <steps/s>

#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <string>
#include <thread>

#include <torch/torch.h>

#include "concord/core/device.h"
#include "concord/core/timer.h"
#include "concord/data/dataset_registry.h"
#include "concord/nn/flat_parameters.h"
#include "concord/supervised/classifier.h"
#include "machine_load.h"

namespace {

struct Options {
  std::string dataset = "fashion_mnist";
  std::string model = "resnet20";
  std::string data_dir;
  std::string device = "cuda";
  int64_t batch = 256;
  int64_t steps = 20;
  int64_t warmup = 3;
  int torch_threads = 1;
  double learning_rate = 0.05;
};

torch::Tensor batch_indices(int64_t step, int64_t batch, int64_t rows, torch::Device device) {
  return torch::arange(step * batch, (step + 1) * batch, torch::kInt64).remainder(rows).to(device);
}

int run(const Options& options) {
  torch::set_num_threads(options.torch_threads);
  const torch::Device device = concord::core::resolve_device(options.device);
  const concord::data::TrainTestSplit data = concord::data::load_dataset(options.dataset, options.data_dir);
  const concord::data::LabelledData train{data.train.images.to(device), data.train.labels.to(device)};

  torch::manual_seed(1);
  torch::nn::Sequential model = concord::supervised::make_classifier(options.model);
  model->to(device);  // before flattening: moving afterwards would break the aliasing
  concord::nn::FlatParameters parameters(*model);
  torch::optim::SGD optimizer({parameters.values()}, options.learning_rate);

  std::printf(
      "device_fit: %s on %s, batch %lld, %lld timed steps after %lld warm-up steps, on %s (%d LibTorch "
      "threads)\nmachine: %u hardware threads, load average at start %s\n",
      options.model.c_str(), options.dataset.c_str(), static_cast<long long>(options.batch),
      static_cast<long long>(options.steps), static_cast<long long>(options.warmup), device.str().c_str(),
      options.torch_threads, std::thread::hardware_concurrency(), concord::bench::load_average().c_str());
  std::fflush(stdout);

  concord::core::Stopwatch clock;
  float loss_value = 0.0f;
  for (int64_t step = 0; step < options.warmup + options.steps; ++step) {
    if (step == options.warmup) {
      // Reading a value waits for the device's queued work, so the clock starts on an idle device.
      if (step > 0) static_cast<void>(parameters.values().sum().item<float>());
      clock.restart();
    }
    const auto rows = train.select(batch_indices(step, options.batch, train.size(), device));
    parameters.zero_grad();
    const torch::Tensor loss = torch::nn::functional::cross_entropy(model->forward(rows.images), rows.labels);
    loss.backward();
    optimizer.step();
    if (step + 1 == options.warmup + options.steps) loss_value = loss.item<float>();  // waits as well
  }
  const double seconds = clock.elapsed_seconds();
  const double steps_per_second = static_cast<double>(options.steps) / seconds;
  const double samples_per_second = steps_per_second * static_cast<double>(options.batch);
  std::printf(
      "\n| device | batch | steps | seconds | samples/s | steps/s | last loss |\n"
      "|---|---:|---:|---:|---:|---:|---:|\n| %s | %lld | %lld | %.3f | %.0f | %.2f | %.4f |\n",
      device.str().c_str(), static_cast<long long>(options.batch), static_cast<long long>(options.steps), seconds,
      samples_per_second, steps_per_second, static_cast<double>(loss_value));
  std::printf("concord-device-fit: %s %lld %lld %.6f %.3f %.4f\n", device.str().c_str(),
              static_cast<long long>(options.batch), static_cast<long long>(options.steps), seconds, samples_per_second,
              steps_per_second);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"device_fit: samples/s of one classifier's training loop on one device (data_parallel's serial loop)"};
  Options options;
  app.add_option("--dataset", options.dataset, "Data set: fashion_mnist or mnist")->capture_default_str();
  app.add_option("--model", options.model, "Classifier: mlp, cnn, fedavg_cnn or resnet20")->capture_default_str();
  app.add_option("--data-dir", options.data_dir, "Where downloaded data and caches are (default: the build's)");
  app.add_option("--device", options.device, "cpu, cuda or cuda:N")->capture_default_str();
  app.add_option("--batch", options.batch, "Rows per step")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20))
      ->capture_default_str();
  app.add_option("--steps", options.steps, "Timed steps")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30))
      ->capture_default_str();
  app.add_option("--warmup", options.warmup, "Untimed steps first")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 30))
      ->capture_default_str();
  app.add_option("--torch-threads", options.torch_threads, "LibTorch intra-op threads")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  app.add_option("--lr", options.learning_rate, "SGD learning rate")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    return run(options);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "device_fit: error: %s\n", error.what());
    return 1;
  }
}
