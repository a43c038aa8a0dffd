// fit_strategies: the synchronisation strategies of `concord fit` side by side, on Fashion-MNIST
// (60,000 train / 10,000 test images) by default or MNIST (--dataset mnist). Three parts, each
// training along `concord fit`'s own path (supervised::fit_with_threads over the CLI's config
// schema), with workers as threads:
//
// strategies      Per strategy (synchronous SGD, local SGD, post-local SGD, EASGD, EAMSGD, GoSGD):
//                 the same model, workers, per-worker batch and steps, over --seeds; per row the
//                 communication rounds and bytes (rank 0's), wall time and the final test
//                 accuracy's mean and min-max over the seeds. --curve-interval N adds each row's
//                 test accuracy every N steps against bytes and wall time (the mean over seeds).
// federated       The FedAvg paper's rounds-to-target comparison: K = 100 clients (600 images each
//                 on Fashion-MNIST), C = 0.1; FedAvg (E = 5, B = 10) against FedSGD (E = 1,
//                 B = inf), each at every learning rate of its grid (--fedavg-lr, --fedsgd-lr) and
//                 for each partition (--partitions iid,non_iid); every cell's rounds until the
//                 test accuracy first reaches the target, then best against best per partition.
//                 A cell stops early as "diverged" when its test loss is not finite or its test
//                 accuracy stays below 0.15 for 10 evaluations in a row; with --prune-grid a cell
//                 also stops once it has used as many rounds as its method's best cell so far
//                 (it cannot beat it), which changes no best-against-best ratio.
// local_vs_large  Lin et al.'s local SGD against large batches: for the same epochs (same samples)
//                 synchronous SGD at the per-worker batch B, synchronous SGD at B x H for each H of
//                 --local-steps (as many communication rounds as local SGD with that H) at each
//                 learning-rate rule of --large-lr-scale (linear: lr x H, Goyal et al.'s rule, which
//                 they pair with a warm-up `concord fit` does not have; sqrt: lr x sqrt(H); or a
//                 number x: lr x H x x), local SGD with each H at batch B, and post-local SGD
//                 (synchronous SGD for the first --warmup-share of the steps, then local SGD with
//                 the largest H). The local SGD rows stop at their last average within the budget
//                 (at most H - 1 steps early), so that rank 0's model is the averaged one. Per row
//                 over --seeds: test and train accuracy of rank 0's final model (the train accuracy
//                 on the whole training set), the generalisation gap (train - test accuracy, and
//                 test - train loss), rounds, bytes and wall time.
//
//   fit_strategies                                      all three parts, mlp, 2 workers
//   fit_strategies --only federated --model fedavg_cnn --fedavg-lr 0.05,0.1,0.2 --fedsgd-lr 0.1,0.3,1
//   fit_strategies --only local_vs_large --model cnn --epochs 10 --seeds 1,2,3
//   fit_strategies --dataset mnist                      the 10,000-digit MNIST of earlier results
//   fit_strategies --quick                              a smoke run of every part: a few steps and rounds

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <torch/torch.h>
#include <CLI/CLI.hpp>

#include "concord/cli/run_config.h"
#include "concord/core/config.h"
#include "concord/data/dataset_registry.h"
#include "concord/nn/flat_parameters.h"
#include "concord/supervised/classifier.h"
#include "concord/supervised/evaluation.h"
#include "concord/supervised/fit.h"
#include "concord/supervised/running_statistics.h"
#include "machine_load.h"
#include "supervised_defaults.h"

namespace {

using concord::core::Config;
namespace supervised = concord::supervised;

struct Options {
  std::string dataset = "fashion_mnist";
  std::string model = "mlp";
  int64_t workers = 2;
  int64_t batch = 32;          // per-worker batch of the per-step parts (B)
  double learning_rate = 0.1;  // their learning rate at batch B
  int64_t seed = 1;
  std::vector<int64_t> seeds;  // per-step parts (empty: strategies {seed}, local_vs_large {1, 2, 3})
  std::vector<std::string> only;
  bool quick = false;
  // strategies
  int64_t steps = 1500;
  int64_t curve_interval = 0;  // steps between the accuracy-curve points (0: no curve)
  // federated
  double target = 0.0;               // 0: default_target(dataset, model)
  int64_t max_rounds = 1000;         // FedAvg's cap on rounds
  int64_t fedsgd_max_rounds = 0;     // FedSGD's cap (0: max_rounds)
  int64_t fedsgd_eval_interval = 1;  // rounds between FedSGD's evaluations (its rounds are cheap, evaluations not)
  std::vector<double> fedavg_learning_rates = {0.05, 0.1, 0.2};
  std::vector<double> fedsgd_learning_rates = {0.1, 0.3, 1.0};
  std::vector<std::string> partitions = {"iid", "non_iid"};
  bool prune_grid = false;
  // local_vs_large
  int64_t epochs = 5;
  std::vector<int64_t> local_steps = {4, 16};
  std::vector<std::string> large_lr_rules = {"linear", "sqrt"};  // large_batch_rate's rules
  double warmup_share = 0.25;
};

std::string format_rate(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", value);
  return text;
}

struct Spread {
  double mean = 0.0, min = 0.0, max = 0.0;
};

Spread spread(const std::vector<double>& values) {
  Spread s;
  if (values.empty()) return s;
  s.min = *std::min_element(values.begin(), values.end());
  s.max = *std::max_element(values.begin(), values.end());
  for (double value : values) s.mean += value / static_cast<double>(values.size());
  return s;
}

// "0.8812 (0.8790-0.8830)", or just the mean when there is one value; `scale` 100 for points.
std::string format_spread(const std::vector<double>& values, int precision, double scale = 1.0) {
  const Spread s = spread(values);
  char text[96];
  if (values.size() <= 1) {
    std::snprintf(text, sizeof text, "%.*f", precision, s.mean * scale);
  } else {
    std::snprintf(text, sizeof text, "%.*f (%.*f-%.*f)", precision, s.mean * scale, precision, s.min * scale, precision,
                  s.max * scale);
  }
  return text;
}

Config base_config(const Options& options, int64_t seed) {
  Config config(concord::cli::concord_schema());
  config.set("run.seed", seed, "bench");
  config.set("fit.dataset", options.dataset, "bench");
  config.set("fit.model", options.model, "bench");
  config.set("fit.workers", options.workers, "bench");
  config.set("fit.batch_size", options.batch, "bench");
  config.set("fit.learning_rate", options.learning_rate, "bench");
  return config;
}

supervised::FitResult run(const Config& config, const concord::data::TrainTestSplit& data,
                          const supervised::FitCallbacks& callbacks = {}) {
  return supervised::fit_with_threads(supervised::fit_config_from(config), config, data, callbacks);
}

// Rank 0's final model (parameters and averaged batch-norm statistics) rebuilt and evaluated on
// `rows`, as sample_quality.cpp's judge does.
supervised::Evaluation evaluate_final_model(const std::string& model_name, const supervised::FitResult& result,
                                            const concord::data::LabelledData& rows) {
  torch::nn::Sequential model = supervised::make_classifier(model_name);
  concord::nn::FlatParameters parameters(*model);
  {
    torch::NoGradGuard no_grad;
    parameters.values().copy_(result.parameters);
  }
  supervised::load_running_statistics(*model, result.running_statistics);
  return supervised::evaluate(model, rows);
}

// ---------------------------------------------------------------------------------------------
// strategies

struct Row {
  std::string label;
  std::vector<std::string> overrides;
};

struct CurvePoint {
  int64_t step = 0;
  std::vector<double> bytes, seconds, accuracy;  // one per seed
};

void per_strategy_table(const Options& options, const concord::data::TrainTestSplit& data,
                        const std::vector<int64_t>& seeds) {
  const std::string eamsgd_lr = std::to_string(options.learning_rate * 0.2);
  const std::vector<Row> rows = {
      {"allreduce (synchronous SGD)", {"fit.strategy=allreduce"}},
      {"local_sgd H=8", {"fit.strategy=local_sgd", "sync.local_sgd.local_steps=8"}},
      {"post-local H=8, warm-up 200",
       {"fit.strategy=local_sgd", "sync.local_sgd.local_steps=8", "sync.local_sgd.warmup_steps=200"}},
      {"easgd sync a=0.2 tau=4", {"fit.strategy=easgd", "sync.easgd.alpha=0.2", "sync.easgd.tau=4"}},
      {"easgd async a=0.2 tau=4", {"fit.strategy=easgd", "sync.easgd.asynchronous=true", "sync.easgd.tau=4"}},
      {"eamsgd d=0.9 tau=4 lr x0.2",
       {"fit.strategy=easgd", "sync.easgd.momentum=0.9", "sync.easgd.tau=4", "fit.learning_rate=" + eamsgd_lr}},
      {"gossip (GoSGD) p=0.2", {"fit.strategy=gossip", "sync.gossip.probability=0.2"}},
  };
  const int64_t steps = options.quick ? 20 : options.steps;
  const int64_t curve_interval = options.quick ? 0 : options.curve_interval;
  std::string seed_list;
  for (int64_t seed : seeds) seed_list += (seed_list.empty() ? "" : ",") + std::to_string(seed);
  std::printf(
      "\nPer-step strategies: %s, %lld workers (threads), batch %lld per worker, lr %.3g unless noted, %lld steps "
      "per worker (%.2f epochs), seeds %s\n\n",
      options.model.c_str(), static_cast<long long>(options.workers), static_cast<long long>(options.batch),
      options.learning_rate, static_cast<long long>(steps),
      static_cast<double>(steps * options.workers * options.batch) / static_cast<double>(data.train.size()),
      seed_list.c_str());
  // Every row reports rank 0's own model; local SGD's is the averaged one only right after an average.
  if (steps % 8 != 0 || curve_interval % 8 != 0) {
    std::printf(
        "note: --steps (and --curve-interval) not multiples of 8: local SGD's evaluations fall between averages, "
        "on rank 0's unaveraged model\n\n");
  }
  const bool several = seeds.size() > 1;
  if (several) {
    std::printf("%-30s %5s %8s %14s %8s %10s\n", "strategy", "seed", "rounds", "bytes (rank 0)", "wall s", "test acc");
  }
  struct Summary {
    std::string label;
    std::vector<double> rounds, bytes, seconds, accuracy;
    std::vector<CurvePoint> curve;
  };
  std::vector<Summary> summaries;
  for (const Row& row : rows) {
    Summary summary{row.label, {}, {}, {}, {}, {}};
    for (const int64_t seed : seeds) {
      Config config = base_config(options, seed);
      config.set("fit.steps", steps, "bench");
      config.set("fit.eval_interval", curve_interval > 0 ? curve_interval : steps, "bench");
      for (const auto& assignment : row.overrides) config.apply_override(assignment, "bench");
      supervised::FitCallbacks callbacks;
      size_t point = 0;
      if (curve_interval > 0) {
        callbacks.on_evaluation = [&](const supervised::FitRecord& record) {
          if (point == summary.curve.size()) summary.curve.push_back({record.step, {}, {}, {}});
          CurvePoint& p = summary.curve[point++];
          p.bytes.push_back(static_cast<double>(record.sync.bytes));
          p.seconds.push_back(record.seconds);
          p.accuracy.push_back(record.test.accuracy);
        };
      }
      const supervised::FitResult result = run(config, data, callbacks);
      summary.rounds.push_back(static_cast<double>(result.final.sync.rounds));
      summary.bytes.push_back(static_cast<double>(result.final.sync.bytes));
      summary.seconds.push_back(result.final.seconds);
      summary.accuracy.push_back(result.final.test.accuracy);
      if (several) {
        std::printf("%-30s %5lld %8lld %14lld %8.1f %10.4f\n", row.label.c_str(), static_cast<long long>(seed),
                    static_cast<long long>(result.final.sync.rounds), static_cast<long long>(result.final.sync.bytes),
                    result.final.seconds, result.final.test.accuracy);
        std::fflush(stdout);
      }
    }
    if (!several) {
      if (summaries.empty()) {
        std::printf("%-30s %8s %14s %8s %10s\n", "strategy", "rounds", "bytes (rank 0)", "wall s", "test acc");
      }
      std::printf("%-30s %8.0f %14.0f %8.1f %10.4f\n", row.label.c_str(), summary.rounds[0], summary.bytes[0],
                  summary.seconds[0], summary.accuracy[0]);
      std::fflush(stdout);
    }
    summaries.push_back(std::move(summary));
  }
  if (several) {
    std::printf("\nMean over %zu seeds (test accuracy: mean and min-max)\n\n", seeds.size());
    std::printf("%-30s %8s %14s %8s %22s\n", "strategy", "rounds", "bytes (rank 0)", "wall s", "test acc");
    for (const Summary& s : summaries) {
      std::printf("%-30s %8.0f %14.0f %8.1f %22s\n", s.label.c_str(), spread(s.rounds).mean, spread(s.bytes).mean,
                  spread(s.seconds).mean, format_spread(s.accuracy, 4).c_str());
    }
  }
  if (curve_interval > 0) {
    std::printf("\nTest accuracy every %lld steps against bytes (rank 0) and wall time, mean over %zu seed(s)\n",
                static_cast<long long>(curve_interval), seeds.size());
    for (const Summary& s : summaries) {
      std::printf("\n%s\n%8s %14s %8s %22s\n", s.label.c_str(), "step", "bytes", "wall s", "test acc");
      for (const CurvePoint& p : s.curve) {
        std::printf("%8lld %14.0f %8.1f %22s\n", static_cast<long long>(p.step), spread(p.bytes).mean,
                    spread(p.seconds).mean, format_spread(p.accuracy, 4).c_str());
      }
    }
  }
  std::fflush(stdout);
}

// ---------------------------------------------------------------------------------------------
// federated

struct Cell {
  double learning_rate = 0.0;
  supervised::FitResult result;
  bool diverged = false;
  int64_t diverged_at = 0;
  int64_t cap = 0;  // the rounds it was allowed
  bool pruned = false;
};

Cell federated(const Options& options, const concord::data::TrainTestSplit& data, const std::string& strategy,
               const std::string& partition, double learning_rate, int64_t cap, int64_t pruned_cap) {
  Config config = base_config(options, options.seed);
  const bool fedsgd = strategy == "fedsgd";
  const int64_t rounds = pruned_cap > 0 ? std::min(cap, pruned_cap) : cap;
  config.set("fit.strategy", strategy, "bench");
  config.set("fit.fedavg.partition", partition, "bench");
  config.set("fit.fedavg.rounds", rounds, "bench");
  config.set("fit.eval_interval", fedsgd ? options.fedsgd_eval_interval : int64_t{1}, "bench");
  config.set("fit.target_accuracy", options.target, "bench");
  config.set("fit.learning_rate", learning_rate, "bench");
  Cell cell;
  cell.learning_rate = learning_rate;
  cell.cap = rounds;
  // A diverged cell would otherwise train to its cap, which for FedAvg is the costliest run.
  int64_t low_in_a_row = 0;
  supervised::FitCallbacks callbacks;
  callbacks.on_evaluation = [&](const supervised::FitRecord& record) {
    const bool lost = !std::isfinite(record.test.loss) || !std::isfinite(record.train_loss);
    low_in_a_row = record.test.accuracy < 0.15 ? low_in_a_row + 1 : 0;
    if (!cell.diverged && (lost || low_in_a_row >= 10)) {
      cell.diverged = true;
      cell.diverged_at = record.step;
    }
  };
  callbacks.should_stop = [&] { return cell.diverged; };
  cell.result = run(config, data, callbacks);
  cell.pruned = pruned_cap > 0 && pruned_cap < cap && !cell.diverged && cell.result.steps_to_target < 0 &&
                cell.result.final.step >= pruned_cap;
  return cell;
}

std::string outcome(const Cell& cell) {
  if (cell.result.steps_to_target > 0) return std::to_string(cell.result.steps_to_target);
  if (cell.diverged) return "diverged (" + std::to_string(cell.diverged_at) + ")";
  if (cell.pruned) return "> " + std::to_string(cell.cap) + " (pruned)";
  return "not reached";
}

// The index of the cell with the fewest rounds to target (-1: none reached it).
int best_cell(const std::vector<Cell>& cells) {
  int best = -1;
  for (size_t i = 0; i < cells.size(); ++i) {
    const int64_t rounds = cells[i].result.steps_to_target;
    if (rounds > 0 && (best < 0 || rounds < cells[static_cast<size_t>(best)].result.steps_to_target)) {
      best = static_cast<int>(i);
    }
  }
  return best;
}

std::string describe_best(const std::vector<Cell>& cells, int best) {
  std::string text = "lr " + format_rate(cells[static_cast<size_t>(best)].learning_rate) + " in " +
                     std::to_string(cells[static_cast<size_t>(best)].result.steps_to_target) + " rounds";
  if (cells.size() > 1 && (best == 0 || best == static_cast<int>(cells.size()) - 1)) {
    text += " (at the grid's edge)";
  }
  return text;
}

void fedavg_versus_fedsgd(const Options& options, const concord::data::TrainTestSplit& data) {
  const int64_t fedavg_cap = options.quick ? 1 : options.max_rounds;
  const int64_t fedsgd_cap =
      options.quick ? 1 : (options.fedsgd_max_rounds > 0 ? options.fedsgd_max_rounds : options.max_rounds);
  const auto grid = [&](const std::vector<double>& rates) {
    return options.quick ? std::vector<double>{rates.front()} : rates;
  };
  const std::vector<double> fedavg_rates = grid(options.fedavg_learning_rates);
  const std::vector<double> fedsgd_rates = grid(options.fedsgd_learning_rates);
  const auto rate_list = [](const std::vector<double>& rates) {
    std::string text;
    for (double rate : rates) text += (text.empty() ? "" : ",") + format_rate(rate);
    return text;
  };
  std::printf(
      "\nFederated: %s, K = 100 clients (%lld images each), C = 0.1, %lld worker threads, seed %lld; FedAvg E = 5, "
      "B = 10, lr %s, at most %lld rounds, evaluated every round; FedSGD E = 1, B = inf, lr %s, at most %lld rounds, "
      "evaluated every %lld; target test accuracy %.3f%s\n\n",
      options.model.c_str(), static_cast<long long>(data.train.size() / 100), static_cast<long long>(options.workers),
      static_cast<long long>(options.seed), rate_list(fedavg_rates).c_str(), static_cast<long long>(fedavg_cap),
      rate_list(fedsgd_rates).c_str(), static_cast<long long>(fedsgd_cap),
      static_cast<long long>(options.fedsgd_eval_interval), options.target,
      options.prune_grid ? "; cells pruned at their method's best so far" : "");
  std::printf("%-9s %-7s %7s %18s %8s %14s %10s %10s\n", "partition", "method", "lr", "rounds to target", "rounds",
              "bytes (rank 0)", "wall s", "final acc");
  for (const std::string& partition : options.partitions) {
    std::vector<Cell> methods[2];
    const char* names[2] = {"fedavg", "fedsgd"};
    const std::vector<double>* rates[2] = {&fedavg_rates, &fedsgd_rates};
    const int64_t caps[2] = {fedavg_cap, fedsgd_cap};
    for (int m = 0; m < 2; ++m) {
      for (const double rate : *rates[m]) {
        const int best = best_cell(methods[m]);
        const int64_t pruned_cap =
            options.prune_grid && best >= 0 ? methods[m][static_cast<size_t>(best)].result.steps_to_target : int64_t{0};
        Cell cell = federated(options, data, names[m], partition, rate, caps[m], pruned_cap);
        std::printf("%-9s %-7s %7s %18s %8lld %14lld %10.1f %10.4f\n", partition.c_str(), names[m],
                    format_rate(rate).c_str(), outcome(cell).c_str(), static_cast<long long>(cell.result.final.step),
                    static_cast<long long>(cell.result.final.sync.bytes), cell.result.final.seconds,
                    cell.result.final.test.accuracy);
        std::fflush(stdout);
        methods[m].push_back(std::move(cell));
      }
    }
    const int fedavg_best = best_cell(methods[0]);
    const int fedsgd_best = best_cell(methods[1]);
    if (fedavg_best < 0) {
      std::printf("%-9s FedAvg did not reach %.3f at any lr in %lld rounds: no ratio\n", partition.c_str(),
                  options.target, static_cast<long long>(fedavg_cap));
      continue;
    }
    const double fedavg_rounds =
        static_cast<double>(methods[0][static_cast<size_t>(fedavg_best)].result.steps_to_target);
    if (fedsgd_best >= 0) {
      const double fedsgd_rounds =
          static_cast<double>(methods[1][static_cast<size_t>(fedsgd_best)].result.steps_to_target);
      std::printf("%-9s best against best: FedAvg %s, FedSGD %s: FedSGD / FedAvg rounds to target %.1fx\n",
                  partition.c_str(), describe_best(methods[0], fedavg_best).c_str(),
                  describe_best(methods[1], fedsgd_best).c_str(), fedsgd_rounds / fedavg_rounds);
    } else {
      std::printf(
          "%-9s best against best: FedAvg %s; FedSGD did not reach it at any lr in %lld rounds: FedSGD / FedAvg "
          "rounds to target > %.1fx\n",
          partition.c_str(), describe_best(methods[0], fedavg_best).c_str(), static_cast<long long>(fedsgd_cap),
          static_cast<double>(fedsgd_cap) / fedavg_rounds);
    }
    std::fflush(stdout);
  }
}

// ---------------------------------------------------------------------------------------------
// local_vs_large

struct LocalRow {
  std::string label;
  std::vector<std::string> overrides;
  int64_t steps = 0;  // fit.steps (the runs at batch B: at most the epochs' steps; see below)
};

// A large batch's learning rate by rule: "linear" (lr x H, Goyal et al.'s scaling rule), "sqrt"
// (lr x sqrt(H)) or a number x (lr x H x x). Throws std::invalid_argument for anything else.
double large_batch_rate(const std::string& rule, double learning_rate, int64_t h) {
  const auto ratio = static_cast<double>(h);
  if (rule == "linear") return learning_rate * ratio;
  if (rule == "sqrt") return learning_rate * std::sqrt(ratio);
  size_t used = 0;
  double factor = 0.0;
  try {
    factor = std::stod(rule, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != rule.size() || !(factor > 0.0)) {
    throw std::invalid_argument("--large-lr-scale " + rule + ": must be linear, sqrt or a number > 0");
  }
  return learning_rate * ratio * factor;
}

void local_versus_large(const Options& options, const concord::data::TrainTestSplit& data,
                        const std::vector<int64_t>& seeds) {
  const int64_t quick_steps = 32;  // --quick: steps at batch B (the large batches take as many samples)
  const int64_t epochs = options.quick ? 1 : options.epochs;
  int64_t small_steps = 0;  // steps of a run at batch B
  {
    Config config = base_config(options, seeds.front());
    config.set("fit.epochs", epochs, "bench");
    if (options.quick) config.set("fit.steps", quick_steps, "bench");
    small_steps = supervised::step_budget(supervised::fit_config_from(config), data.train.size());
  }
  const int64_t largest_h = *std::max_element(options.local_steps.begin(), options.local_steps.end());
  const auto warmup = static_cast<int64_t>(std::llround(options.warmup_share * static_cast<double>(small_steps)));
  // Local SGD's replicas agree only right after an average, and rank 0's model is the one
  // evaluated: its runs stop at the last averaging step within the budget (at most H - 1 steps
  // early), as Lin et al. evaluate the averaged model.
  const auto ending_on_average = [&](int64_t h, int64_t warm) { return warm + (small_steps - warm) / h * h; };
  // The large batches' steps: the epochs' worth at B x H (the quick run's share of quick_steps).
  const auto large_steps = [&](int64_t h) {
    if (options.quick) return std::max<int64_t>(1, quick_steps / h);
    return epochs *
           supervised::steps_per_epoch(data.train.size(), static_cast<int>(options.workers), options.batch * h);
  };

  const std::string b = std::to_string(options.batch);
  std::vector<LocalRow> rows;
  rows.push_back({"sync SGD B=" + b, {"fit.strategy=allreduce"}, small_steps});
  for (const int64_t h : options.local_steps) {
    for (const std::string& rule : options.large_lr_rules) {
      const double rate = large_batch_rate(rule, options.learning_rate, h);
      rows.push_back({"sync SGD B=" + std::to_string(options.batch * h) + " lr " + format_rate(rate),
                      {"fit.strategy=allreduce", "fit.batch_size=" + std::to_string(options.batch * h),
                       "fit.learning_rate=" + std::to_string(rate)},
                      large_steps(h)});
    }
  }
  for (const int64_t h : options.local_steps) {
    rows.push_back({"local SGD H=" + std::to_string(h) + " B=" + b,
                    {"fit.strategy=local_sgd", "sync.local_sgd.local_steps=" + std::to_string(h)},
                    ending_on_average(h, 0)});
  }
  rows.push_back({"post-local H=" + std::to_string(largest_h) + " warm-up " + std::to_string(warmup),
                  {"fit.strategy=local_sgd", "sync.local_sgd.local_steps=" + std::to_string(largest_h),
                   "sync.local_sgd.warmup_steps=" + std::to_string(warmup)},
                  ending_on_average(largest_h, warmup)});

  std::string seed_list;
  for (int64_t seed : seeds) seed_list += (seed_list.empty() ? "" : ",") + std::to_string(seed);
  std::string rules;
  for (const std::string& rule : options.large_lr_rules) rules += (rules.empty() ? "" : ", ") + rule;
  std::printf(
      "\nLocal SGD against large batches (Lin et al.): %s, %lld workers (threads), per-worker batch B = %lld at lr "
      "%.3g, %lld epoch(s) for every row (%lld steps at batch B%s); large batches B x H with the learning rate by "
      "rule (%s: linear lr x H, sqrt lr x sqrt(H), a number x lr x H x x); local SGD rows end at their last "
      "average (at most H - 1 steps early); post-local SGD synchronous for the first %lld steps (%.0f %%); plain SGD, "
      "no momentum; seeds %s. Train accuracy: rank 0's final model on all %lld training images; gap = train - test "
      "accuracy (points), loss gap = test - train loss\n\n",
      options.model.c_str(), static_cast<long long>(options.workers), static_cast<long long>(options.batch),
      options.learning_rate, static_cast<long long>(epochs), static_cast<long long>(small_steps),
      options.quick ? ", --quick" : "", rules.c_str(), static_cast<long long>(warmup), 100.0 * options.warmup_share,
      seed_list.c_str(), static_cast<long long>(data.train.size()));
  std::printf("%-28s %5s %9s %9s %8s %9s %8s %14s %8s\n", "row", "seed", "test acc", "train acc", "gap pts", "loss gap",
              "rounds", "bytes (rank 0)", "wall s");
  struct Summary {
    std::vector<double> test, train, gap, loss_gap, rounds, bytes, seconds;
  };
  std::vector<Summary> summaries(rows.size());
  for (size_t r = 0; r < rows.size(); ++r) {
    const LocalRow& row = rows[r];
    for (const int64_t seed : seeds) {
      Config config = base_config(options, seed);
      config.set("fit.epochs", epochs, "bench");
      config.set("fit.steps", row.steps, "bench");
      // One evaluation, after the last step.
      config.set("fit.eval_interval", small_steps, "bench");
      for (const auto& assignment : row.overrides) config.apply_override(assignment, "bench");
      const supervised::FitResult result = run(config, data);
      const supervised::Evaluation train = evaluate_final_model(options.model, result, data.train);
      const supervised::Evaluation& test = result.final.test;
      Summary& s = summaries[r];
      s.test.push_back(test.accuracy);
      s.train.push_back(train.accuracy);
      s.gap.push_back(train.accuracy - test.accuracy);
      s.loss_gap.push_back(test.loss - train.loss);
      s.rounds.push_back(static_cast<double>(result.final.sync.rounds));
      s.bytes.push_back(static_cast<double>(result.final.sync.bytes));
      s.seconds.push_back(result.final.seconds);
      std::printf("%-28s %5lld %9.4f %9.4f %8.2f %9.4f %8lld %14lld %8.1f\n", row.label.c_str(),
                  static_cast<long long>(seed), test.accuracy, train.accuracy, 100.0 * (train.accuracy - test.accuracy),
                  test.loss - train.loss, static_cast<long long>(result.final.sync.rounds),
                  static_cast<long long>(result.final.sync.bytes), result.final.seconds);
      std::fflush(stdout);
    }
  }
  std::printf("\nMean (min-max) over %zu seed(s)\n\n", seeds.size());
  std::printf("%-28s %22s %22s %18s %9s %8s %14s %8s\n", "row", "test acc", "train acc", "gap pts", "loss gap",
              "rounds", "bytes (rank 0)", "wall s");
  for (size_t r = 0; r < rows.size(); ++r) {
    const Summary& s = summaries[r];
    std::printf("%-28s %22s %22s %18s %9.4f %8.0f %14.0f %8.1f\n", rows[r].label.c_str(),
                format_spread(s.test, 4).c_str(), format_spread(s.train, 4).c_str(),
                format_spread(s.gap, 2, 100.0).c_str(), spread(s.loss_gap).mean, spread(s.rounds).mean,
                spread(s.bytes).mean, spread(s.seconds).mean);
  }
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Sync strategies, FedAvg against FedSGD, and local SGD against large batches"};
  Options options;
  app.add_option("--dataset", options.dataset, "Data set: fashion_mnist or mnist")->capture_default_str();
  app.add_option("--model", options.model, "Classifier: mlp, cnn, fedavg_cnn or resnet20")->capture_default_str();
  app.add_option("--workers", options.workers, "Worker threads")->capture_default_str();
  app.add_option("--batch", options.batch, "Per-worker batch B of the per-step parts")->capture_default_str();
  app.add_option("--lr", options.learning_rate, "Learning rate of the per-step parts at batch B")
      ->capture_default_str();
  app.add_option("--seed", options.seed, "run.seed (federated; strategies unless --seeds)")->capture_default_str();
  app.add_option("--seeds", options.seeds,
                 "Comma-separated seeds of the strategies and local_vs_large parts (default: strategies --seed, "
                 "local_vs_large 1,2,3)")
      ->delimiter(',');
  app.add_option("--only", options.only, "Parts to run: strategies, federated, local_vs_large (default all)")
      ->delimiter(',')
      ->check(CLI::IsMember({"strategies", "federated", "local_vs_large"}));
  app.add_flag("--quick", options.quick, "Smoke run of every part: a few steps and rounds, one lr, one seed");
  app.add_option("--steps", options.steps, "strategies: steps per worker")->capture_default_str();
  app.add_option("--curve-interval", options.curve_interval,
                 "strategies: also print test accuracy every N steps against bytes and wall time (0: no)")
      ->capture_default_str();
  app.add_option(
      "--target", options.target,
      "federated: target test accuracy (default: mnist 0.95; fashion_mnist mlp 0.87, cnn 0.89, others 0.90)");
  app.add_option("--max-rounds", options.max_rounds, "federated: most FedAvg rounds per cell")->capture_default_str();
  app.add_option("--fedsgd-max-rounds", options.fedsgd_max_rounds,
                 "federated: most FedSGD rounds per cell (0: --max-rounds)")
      ->capture_default_str();
  app.add_option("--fedsgd-eval-interval", options.fedsgd_eval_interval, "federated: rounds between FedSGD evaluations")
      ->capture_default_str();
  app.add_option("--fedavg-lr", options.fedavg_learning_rates, "federated: FedAvg client learning rates (a grid)")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--fedsgd-lr", options.fedsgd_learning_rates, "federated: FedSGD learning rates (a grid)")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--partitions", options.partitions, "federated: iid, non_iid or both")
      ->delimiter(',')
      ->check(CLI::IsMember({"iid", "non_iid"}))
      ->capture_default_str();
  app.add_flag("--prune-grid", options.prune_grid,
               "federated: stop a cell once it has used as many rounds as its method's best cell so far");
  app.add_option("--epochs", options.epochs, "local_vs_large: epochs of every row")->capture_default_str();
  app.add_option("--local-steps", options.local_steps, "local_vs_large: the H values (large batch B x H)")
      ->delimiter(',')
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--large-lr-scale", options.large_lr_rules,
                 "local_vs_large: the large batches' learning rates, one row per H each: linear (lr x H), sqrt "
                 "(lr x sqrt(H)) or a number x (lr x H x x)")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--warmup-share", options.warmup_share,
                 "local_vs_large: share of the steps post-local SGD trains synchronously first")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    if (options.fedavg_learning_rates.empty() || options.fedsgd_learning_rates.empty() || options.partitions.empty() ||
        options.local_steps.empty() || options.large_lr_rules.empty()) {
      throw std::invalid_argument("--fedavg-lr, --fedsgd-lr, --partitions and --local-steps need a value each");
    }
    for (const std::string& rule : options.large_lr_rules) large_batch_rate(rule, 1.0, 1);  // refuses a bad rule
    torch::set_num_threads(1);
    const auto data = concord::data::load_dataset(options.dataset);
    if (app.count("--target") == 0) options.target = concord::bench::default_target(options.dataset, options.model);
    const auto wanted = [&](const std::string& part) {
      return options.only.empty() || std::find(options.only.begin(), options.only.end(), part) != options.only.end();
    };
    const auto seeds_or = [&](std::vector<int64_t> fallback) {
      if (options.quick) return std::vector<int64_t>{options.seeds.empty() ? fallback.front() : options.seeds.front()};
      return options.seeds.empty() ? fallback : options.seeds;
    };
    std::printf(
        "fit_strategies: %s (%s, %lld train / %lld test images), model %s, %u hardware threads, load average %s\n",
        options.dataset.c_str(), concord::bench::dataset_source(options.dataset).c_str(),
        static_cast<long long>(data.train.size()), static_cast<long long>(data.test.size()), options.model.c_str(),
        std::thread::hardware_concurrency(), concord::bench::load_average().c_str());
    if (wanted("strategies")) per_strategy_table(options, data, seeds_or({options.seed}));
    if (wanted("federated")) fedavg_versus_fedsgd(options, data);
    if (wanted("local_vs_large")) local_versus_large(options, data, seeds_or({1, 2, 3}));
    std::printf("\nload average at the end %s\n", concord::bench::load_average().c_str());
  } catch (const std::exception& error) {
    std::fprintf(stderr, "fit_strategies: error: %s\n", error.what());
    return 1;
  }
  return 0;
}
