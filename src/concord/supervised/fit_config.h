#pragma once

#include <cstdint>
#include <string>

#include "concord/core/config.h"

namespace concord::supervised {

// Everything `concord fit` reads from the [fit] section (keys fit.<field>, and fit.fedavg.<field>
// for the federated ones); the per-step strategies' own keys are sync.<name>.<key>.
struct FitConfig {
  std::string task = "classifier";  // classifier, or gan (GAP: the keys gan.*, gan_config.h)
  std::string dataset = "mnist";     // the only data set so far
  std::string model = "mlp";         // mlp or cnn (classifier.h)
  std::string strategy = "sync";     // sync, local_sgd, easgd, gossip (per step) or fedavg, fedsgd (per round)
  int workers = 2;                   // replicas as threads of this process (ignored under `concord launch`)
  int64_t steps = 600;               // per-step strategies: optimiser steps of each replica
  int64_t batch_size = 32;           // per-step strategies: minibatch rows per replica and step
  double learning_rate = 0.1;        // SGD step size (also each federated client's)
  double momentum = 0.0;             // SGD momentum (per-step strategies)
  int64_t eval_interval = 100;       // steps (or rounds) between test-set evaluations
  double target_accuracy = 0.0;      // stop once the test accuracy reaches this (0: train to the end)
  int64_t checkpoint_interval = 0;   // steps (or rounds) between checkpoints, rounded up to an evaluation (0: only at the end)
  std::string data_dir;              // where scripts/setup.sh put MNIST (empty: the source tree's third_party)
  uint64_t seed = 1;                 // run.seed

  // Federated averaging (and FedSGD, which forces local_epochs = 1, local_batch = 0).
  int64_t rounds = 100;              // communication rounds
  int clients = 100;                 // K
  double client_fraction = 0.1;      // C
  int64_t local_epochs = 5;          // E
  int64_t local_batch = 10;          // B (0: a client's whole data, B = infinity)
  std::string partition = "iid";     // iid, or non_iid (label-sorted shards, 2 per client)

  bool federated() const { return strategy == "fedavg" || strategy == "fedsgd"; }
};

// Declares fit.* and fit.fedavg.* with FitConfig's defaults.
void declare_fit_keys(core::ConfigSchema& schema);

// Reads them (and run.seed). Throws std::invalid_argument naming the key for a value out of range
// or an unknown task, model, strategy or partition.
FitConfig fit_config_from(const core::Config& config);

}  // namespace concord::supervised
