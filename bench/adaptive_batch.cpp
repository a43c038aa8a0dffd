// adaptive_batch: ABS / ABSA (Yao et al. 2018) against fixed batch sizes on MNIST: parameter
// updates and wall time until the test accuracy first reaches the target, and the final
// accuracy, with the same model, seed, workers (threads, synchronous SGD) and budget in epochs.
//
//   rows: fixed small batch B (lr L); fixed large batch R*B at lr R*L (the linear scaling rule)
//         and at lr Q*L (ABS's learning-rate cap);
//         ABS from B (lr L), doubling the batch up to R*B and the learning rate up to Q*L when the
//         eigenvalue halves; the same with the
//         duration factor k (a doubling forced after k epochs without one); ABSA with k, the
//         same plus FGSM examples until mid-training.
//
// Every run trains along `concord fit`'s own path (supervised::fit_with_threads), evaluating
// every --eval-interval steps; the eigenvalue estimates are part of ABS's wall time.
//
//   adaptive_batch                          mlp, 2 workers, 10 epochs, target 0.95
//   adaptive_batch --model cnn --target 0.97
//   adaptive_batch --quick                  a smoke run: one epoch each

#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include <torch/torch.h>
#include <CLI/CLI.hpp>

#include "concord/cli/run_config.h"
#include "concord/core/config.h"
#include "concord/data/mnist.h"
#include "concord/supervised/fit.h"

namespace {

using concord::core::Config;
namespace supervised = concord::supervised;

struct Options {
  std::string model = "mlp";
  int64_t workers = 2;
  int64_t epochs = 10;
  int64_t batch = 32;
  double learning_rate = 0.05;
  int64_t max_ratio = 16;
  double target = 0.95;
  int64_t max_lr_ratio = 4;  // ABS's cap on the learning rate's growth
  int64_t force_after = 2;   // ABS's duration factor for the k= rows
  int64_t eval_interval = 10;
  int64_t seed = 1;
  bool quick = false;
};

struct Row {
  std::string label;
  std::vector<std::string> overrides;
};

std::string format_or_dash(int64_t value) { return value > 0 ? std::to_string(value) : std::string("not reached"); }

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ABS / ABSA against fixed batch sizes on MNIST"};
  Options options;
  app.add_option("--model", options.model, "mlp or cnn");
  app.add_option("--workers", options.workers, "Worker threads (synchronous SGD)");
  app.add_option("--epochs", options.epochs, "Budget in epochs of the training set");
  app.add_option("--batch", options.batch, "Small batch per worker (ABS's first)");
  app.add_option("--lr", options.learning_rate, "Learning rate at the small batch");
  app.add_option("--max-ratio", options.max_ratio, "Large batch / small batch (ABS's cap)");
  app.add_option("--target", options.target, "Target test accuracy");
  app.add_option("--max-lr-ratio", options.max_lr_ratio, "ABS's cap on the learning rate's growth");
  app.add_option("--force-after", options.force_after, "Duration factor k: double after k epochs without a doubling");
  app.add_option("--eval-interval", options.eval_interval, "Steps between test evaluations");
  app.add_option("--seed", options.seed, "run.seed");
  app.add_flag("--quick", options.quick, "Smoke run: one epoch each");
  CLI11_PARSE(app, argc, argv);
  try {
    torch::set_num_threads(1);
    const auto data = concord::data::load_mnist(concord::data::default_data_dir());
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
    std::printf(
        "adaptive_batch: MNIST (%lld train / %lld test digits), %s, %lld workers (threads, sync SGD), "
        "%lld epochs, small batch %lld per worker at lr %.3g, large %lldx, target %.3f, seed %lld, "
        "%u hardware threads\n\n",
        static_cast<long long>(data.train.size()), static_cast<long long>(data.test.size()), options.model.c_str(),
        static_cast<long long>(options.workers), static_cast<long long>(epochs), static_cast<long long>(options.batch),
        options.learning_rate, static_cast<long long>(options.max_ratio), options.target,
        static_cast<long long>(options.seed), std::thread::hardware_concurrency());
    std::printf("%-20s %18s %12s %8s %12s %8s %10s\n", "schedule", "updates to target", "s to target", "updates",
                "final batch", "wall s", "final acc");
    for (const Row& row : rows) {
      Config config(concord::cli::concord_schema());
      config.set("run.seed", options.seed, "bench");
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
      std::printf("%-20s %18s %12s %8lld %12lld %8.1f %10.4f\n", row.label.c_str(),
                  format_or_dash(updates_to_target).c_str(),
                  seconds_to_target >= 0.0 ? std::to_string(seconds_to_target).substr(0, 6).c_str() : "-",
                  static_cast<long long>(result.final.step), static_cast<long long>(result.final.batch_size),
                  result.final.seconds, result.final.test.accuracy);
      std::fflush(stdout);
    }
  } catch (const std::exception& error) {
    std::fprintf(stderr, "adaptive_batch: error: %s\n", error.what());
    return 1;
  }
  return 0;
}
