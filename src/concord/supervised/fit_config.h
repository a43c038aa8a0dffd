#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "concord/core/config.h"

namespace concord::supervised {

// Everything `concord fit` reads from the [fit] section (keys fit.<field>, and fit.fedavg.<field>
// for the federated ones); the per-step strategies' own keys are sync.<name>.<key>.
struct FitConfig {
  std::string task = "classifier";     // classifier, or gan (GAP: the keys gan.*, gan_config.h)
  std::string dataset = "mnist";       // mnist or fashion_mnist (data/dataset_registry.h)
  std::string model = "mlp";           // mlp, cnn, fedavg_cnn, resnet20 (classifier.h)
  std::string strategy = "allreduce";  // allreduce, local_sgd, easgd, gossip (per step: sync.strategy's names)
                                       // or fedavg, fedsgd (per round)
  int workers = 2;                     // replicas as threads of this process (ignored under `concord launch`)
  int64_t steps = 600;                 // per-step strategies: optimiser steps of each replica
  int64_t batch_size = 32;             // per-step strategies: minibatch rows per replica and step
  double learning_rate = 0.1;          // SGD step size (also each federated client's)
  double momentum = 0.0;               // SGD momentum (per-step strategies)
  int64_t eval_interval = 100;         // steps (or rounds) between test-set evaluations
  double target_accuracy = 0.0;        // stop once the test accuracy reaches this (0: train to the end)
  int64_t checkpoint_interval =
      0;  // steps (or rounds) between checkpoints, rounded up to an evaluation (0: only at the end)
  int64_t epochs =
      0;  // per-step strategies: stop after this many epochs of each replica's shard (0: fit.steps decides)
  std::string data_dir;  // where scripts/setup.sh put MNIST (empty: the source tree's third_party)
  uint64_t seed = 1;     // run.seed
  // comm.timeout_seconds, where the schema has it: the longest any replica waits for another at a
  // collective, under threads as under processes. It must cover the work between two collectives
  // that one replica does alone: rank 0's evaluation of the test set, and the unequal share of a
  // federated round's clients.
  double timeout_seconds = 60.0;

  std::chrono::milliseconds timeout() const {
    return std::chrono::milliseconds(static_cast<int64_t>(timeout_seconds * 1000.0));
  }

  // Federated averaging (and FedSGD, which forces local_epochs = 1, local_batch = 0).
  int64_t rounds = 100;           // communication rounds
  int clients = 100;              // K
  double client_fraction = 0.1;   // C
  int64_t local_epochs = 5;       // E
  int64_t local_batch = 10;       // B (0: a client's whole data, B = infinity)
  std::string partition = "iid";  // iid, or non_iid (label-sorted shards, 2 per client)

  // Adaptive batch size (per-step strategies; adaptive_batch_schedule.h): fixed, abs, or absa
  // (ABS with FGSM examples until mid-training, which needs fit.epochs).
  std::string schedule = "fixed";
  int64_t abs_max_ratio = 16;          // the batch grows at most this many times
  int64_t abs_max_lr_ratio = 4;        // the learning rate at most this many times (SGD's stability limit)
  int64_t abs_force_after_epochs = 0;  // double after this many epochs without a doubling (0: never)
  int64_t abs_hessian_batch = 256;     // rows of each replica's shard the eigenvalue is estimated on
  int abs_power_iterations = 20;       // Hessian-vector products per estimate at most
  double abs_tolerance = 1e-3;         // power iteration stops when the estimate moves by less (relative)
  double abs_adversarial_share = 0.5;  // absa: share of each batch replaced by FGSM examples at first
  double abs_fgsm_epsilon = 0.1;       // absa: FGSM step on images in [0, 1]

  bool federated() const { return strategy == "fedavg" || strategy == "fedsgd"; }
};

// Optimiser steps one epoch takes: the training set once across all replicas (the same number on
// every rank, so that end-of-epoch collectives line up even when shards differ by a row).
int64_t steps_per_epoch(int64_t train_rows, int workers, int64_t batch_size);

// The steps a per-step fit takes at most: fit.steps, or fewer when fit.epochs ends it first
// (adaptive schedules take fewer still, their batches growing).
int64_t step_budget(const FitConfig& fit, int64_t train_rows);

// Declares fit.* and fit.fedavg.* with FitConfig's defaults.
void declare_fit_keys(core::ConfigSchema& schema);

// Reads them (and run.seed). Throws std::invalid_argument naming the key for a value out of range
// or an unknown task, model, strategy or partition.
FitConfig fit_config_from(const core::Config& config);

}  // namespace concord::supervised
