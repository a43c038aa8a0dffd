// adaptive_batch: ABS / ABSA (Yao et al. 2018) against fixed batch sizes on Fashion-MNIST (60,000
// train / 10,000 test images; --dataset mnist: the 10,000 MNIST digits of earlier results):
// parameter updates and wall time until the test accuracy first reaches the target, and the
// final accuracy, with the same model, seed, workers (threads, synchronous SGD) and budget in
// epochs.
//
//   rows: fixed small batch B (lr L); fixed large batch R*B at lr R*L (the linear scaling rule)
//         and at lr Q*L (ABS's learning-rate cap);
//         ABS from B (lr L), doubling the batch up to R*B and the learning rate up to Q*L when the
//         eigenvalue halves; the same with the
//         duration factor k (a doubling forced after k epochs without one); ABSA with k, the
//         same plus FGSM examples until mid-training.
//
// Every run trains along `concord fit`'s own path (supervised::fit_with_threads), evaluating
// every --eval-interval steps; the eigenvalue estimates are part of ABS's wall time. --seeds
// repeats the table per seed.
//
//   adaptive_batch                          mlp, 2 workers, 10 epochs, target 0.87
//   adaptive_batch --model cnn --seeds 1,2,3
//   adaptive_batch --dataset mnist          the earlier MNIST runs (target 0.95)
//   adaptive_batch --quick                  a smoke run: one epoch each of 8,000 training images

#include <algorithm>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include <torch/torch.h>
#include <CLI/CLI.hpp>

#include "concord/cli/run_config.h"
#include "concord/core/config.h"
#include "concord/data/dataset_registry.h"
#include "concord/supervised/fit.h"
#include "machine_load.h"
#include "supervised_defaults.h"

namespace {

using concord::core::Config;
namespace supervised = concord::supervised;

struct Options {
  std::string dataset = "fashion_mnist";
  std::string model = "mlp";
  int64_t workers = 2;
  int64_t epochs = 10;
  int64_t batch = 32;
  double learning_rate = 0.05;
  int64_t max_ratio = 16;
  double target = 0.0;        // 0: default_target(dataset, model)
  int64_t max_lr_ratio = 4;   // ABS's cap on the learning rate's growth
  int64_t force_after = 2;    // ABS's duration factor for the k= rows
  int64_t eval_interval = 0;  // 0: mnist 10, fashion_mnist 50 (a test evaluation costs 5x as much there)
  int64_t seed = 1;
  std::vector<int64_t> seeds;  // empty: {seed}
  bool quick = false;
};

// --quick: the first `rows` rows of a part (both data sets are shuffled across classes).
concord::data::LabelledData head(const concord::data::LabelledData& data, int64_t rows) {
  const int64_t n = std::min(rows, data.size());
  return {data.images.narrow(0, 0, n), data.labels.narrow(0, 0, n)};
}

struct Row {
  std::string label;
  std::vector<std::string> overrides;
};

std::string format_or_dash(int64_t value) { return value > 0 ? std::to_string(value) : std::string("not reached"); }

// "0.8812 (0.8790-0.8830)", or just the value when there is one.
std::string format_spread(const std::vector<double>& values, int precision) {
  double mean = 0.0;
  for (double value : values) mean += value / static_cast<double>(values.size());
  const double low = *std::min_element(values.begin(), values.end());
  const double high = *std::max_element(values.begin(), values.end());
  char text[96];
  if (values.size() == 1) {
    std::snprintf(text, sizeof text, "%.*f", precision, mean);
  } else {
    std::snprintf(text, sizeof text, "%.*f (%.*f-%.*f)", precision, mean, precision, low, precision, high);
  }
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ABS / ABSA against fixed batch sizes"};
  Options options;
  app.add_option("--dataset", options.dataset, "Data set: fashion_mnist or mnist")->capture_default_str();
  app.add_option("--model", options.model, "Classifier: mlp, cnn, fedavg_cnn or resnet20")->capture_default_str();
  app.add_option("--workers", options.workers, "Worker threads (synchronous SGD)")->capture_default_str();
  app.add_option("--epochs", options.epochs, "Budget in epochs of the training set")->capture_default_str();
  app.add_option("--batch", options.batch, "Small batch per worker (ABS's first)")->capture_default_str();
  app.add_option("--lr", options.learning_rate, "Learning rate at the small batch")->capture_default_str();
  app.add_option("--max-ratio", options.max_ratio, "Large batch / small batch (ABS's cap)")->capture_default_str();
  app.add_option("--target", options.target,
                 "Target test accuracy (default: mnist 0.95; fashion_mnist mlp 0.87, cnn 0.89, others 0.90)");
  app.add_option("--max-lr-ratio", options.max_lr_ratio, "ABS's cap on the learning rate's growth")
      ->capture_default_str();
  app.add_option("--force-after", options.force_after, "Duration factor k: double after k epochs without a doubling")
      ->capture_default_str();
  app.add_option("--eval-interval", options.eval_interval,
                 "Steps between test evaluations (default: mnist 10, fashion_mnist 50)");
  app.add_option("--seed", options.seed, "run.seed")->capture_default_str();
  app.add_option("--seeds", options.seeds, "Comma-separated seeds, one table each (default: --seed)")->delimiter(',');
  app.add_flag("--quick", options.quick, "Smoke run: one epoch each of the first 8,000 training images");
  CLI11_PARSE(app, argc, argv);
  try {
    torch::set_num_threads(1);
    auto data = concord::data::load_dataset(options.dataset);
    const int64_t train_rows = data.train.size(), test_rows = data.test.size();
    if (options.quick) data = {head(data.train, 8000), head(data.test, 2000)};
    if (app.count("--target") == 0) options.target = concord::bench::default_target(options.dataset, options.model);
    if (options.eval_interval <= 0) options.eval_interval = options.dataset == "fashion_mnist" ? 50 : 10;
    std::vector<int64_t> seeds = options.seeds.empty() ? std::vector<int64_t>{options.seed} : options.seeds;
    if (options.quick) seeds.resize(1);
    const int64_t epochs = options.quick ? 1 : options.epochs;
    const double ratio = static_cast<double>(options.max_ratio);
    const std::vector<Row> rows = {
        {"fixed B=" + std::to_string(options.batch), {}},
        {"fixed B=" + std::to_string(options.batch * options.max_ratio) + " lr x" + std::to_string(options.max_ratio),
         {"fit.batch_size=" + std::to_string(options.batch * options.max_ratio),
          "fit.learning_rate=" + std::to_string(options.learning_rate * ratio)}},
        {"fixed B=" + std::to_string(options.batch * options.max_ratio) + " lr x" +
             std::to_string(options.max_lr_ratio),
         {"fit.batch_size=" + std::to_string(options.batch * options.max_ratio),
          "fit.learning_rate=" + std::to_string(options.learning_rate * static_cast<double>(options.max_lr_ratio))}},
        {"abs", {"fit.schedule=abs"}},
        {"abs k=" + std::to_string(options.force_after),
         {"fit.schedule=abs", "fit.abs.force_after_epochs=" + std::to_string(options.force_after)}},
        {"absa k=" + std::to_string(options.force_after),
         {"fit.schedule=absa", "fit.abs.force_after_epochs=" + std::to_string(options.force_after)}},
    };
    const std::string subset = options.quick ? ", --quick: the first " + std::to_string(data.train.size()) + " / " +
                                                   std::to_string(data.test.size())
                                             : std::string();
    std::string seed_list;
    for (int64_t seed : seeds) seed_list += (seed_list.empty() ? "" : ",") + std::to_string(seed);
    std::printf(
        "adaptive_batch: %s (%s, %lld train / %lld test images%s), %s, %lld workers (threads, sync SGD), "
        "%lld epochs, small batch %lld per worker at lr %.3g, large %lldx, target %.3f, evaluated every %lld updates, "
        "seeds %s, "
        "%u hardware threads, load average %s\n",
        options.dataset.c_str(), concord::bench::dataset_source(options.dataset).c_str(),
        static_cast<long long>(train_rows), static_cast<long long>(test_rows), subset.c_str(), options.model.c_str(),
        static_cast<long long>(options.workers), static_cast<long long>(epochs), static_cast<long long>(options.batch),
        options.learning_rate, static_cast<long long>(options.max_ratio), options.target,
        static_cast<long long>(options.eval_interval), seed_list.c_str(), std::thread::hardware_concurrency(),
        concord::bench::load_average().c_str());
    // Per row: updates to target (of the seeds that reached it) and final accuracy, over the seeds.
    std::vector<std::vector<double>> reached(rows.size()), final_accuracy(rows.size());
    for (const int64_t seed : seeds) {
      std::printf("\nseed %lld\n", static_cast<long long>(seed));
      std::printf("%-20s %18s %12s %8s %12s %8s %10s\n", "schedule", "updates to target", "s to target", "updates",
                  "final batch", "wall s", "final acc");
      for (size_t r = 0; r < rows.size(); ++r) {
        const Row& row = rows[r];
        Config config(concord::cli::concord_schema());
        config.set("run.seed", seed, "bench");
        config.set("fit.dataset", options.dataset, "bench");
        config.set("fit.model", options.model, "bench");
        config.set("fit.workers", options.workers, "bench");
        config.set("fit.epochs", epochs, "bench");
        config.set("fit.batch_size", options.batch, "bench");
        config.set("fit.learning_rate", options.learning_rate, "bench");
        config.set("fit.abs.max_ratio", options.max_ratio, "bench");
        config.set("fit.abs.max_lr_ratio", options.max_lr_ratio, "bench");
        config.set("fit.eval_interval", options.eval_interval, "bench");
        for (const auto& assignment : row.overrides) config.apply_override(assignment, "bench");
        // The whole budget is trained (fit.target_accuracy stays 0): a run stopped at the target
        // would hide the final accuracy. The callback notes when the target was first reached.
        const double target = options.quick ? 0.0 : options.target;
        supervised::FitCallbacks callbacks;
        int64_t updates_to_target = -1;
        double seconds_to_target = -1.0;
        callbacks.on_evaluation = [&](const supervised::FitRecord& record) {
          if (target > 0.0 && updates_to_target < 0 && record.test.accuracy >= target) {
            updates_to_target = record.step;
            seconds_to_target = record.seconds;
          }
        };
        const supervised::FitResult result =
            supervised::fit_with_threads(supervised::fit_config_from(config), config, data, callbacks);
        if (updates_to_target > 0) reached[r].push_back(static_cast<double>(updates_to_target));
        final_accuracy[r].push_back(result.final.test.accuracy);
        std::printf("%-20s %18s %12s %8lld %12lld %8.1f %10.4f\n", row.label.c_str(),
                    format_or_dash(updates_to_target).c_str(),
                    seconds_to_target >= 0.0 ? std::to_string(seconds_to_target).substr(0, 6).c_str() : "-",
                    static_cast<long long>(result.final.step), static_cast<long long>(result.final.batch_size),
                    result.final.seconds, result.final.test.accuracy);
        std::fflush(stdout);
      }
    }
    if (seeds.size() > 1) {
      std::printf("\nOver %zu seeds: updates to target (mean, min-max, of the seeds reaching it) and final accuracy\n",
                  seeds.size());
      std::printf("%-20s %8s %24s %24s\n", "schedule", "reached", "updates to target", "final acc");
      for (size_t r = 0; r < rows.size(); ++r) {
        std::printf("%-20s %8s %24s %24s\n", rows[r].label.c_str(),
                    (std::to_string(reached[r].size()) + "/" + std::to_string(seeds.size())).c_str(),
                    reached[r].empty() ? "-" : format_spread(reached[r], 0).c_str(),
                    format_spread(final_accuracy[r], 4).c_str());
      }
    }
    std::printf("\nload average at the end %s\n", concord::bench::load_average().c_str());
  } catch (const std::exception& error) {
    std::fprintf(stderr, "adaptive_batch: error: %s\n", error.what());
    return 1;
  }
  return 0;
}
