#pragma once

#include <cstdint>
#include <functional>

#include <torch/nn/modules/container/sequential.h>
#include <torch/types.h>

#include "concord/comm/communicator.h"
#include "concord/core/checkpoint.h"
#include "concord/core/timer.h"
#include "concord/data/labelled_data.h"
#include "concord/supervised/evaluation.h"
#include "concord/supervised/fit_config.h"
#include "concord/sync/sync_strategy.h"

namespace concord::supervised {

// One evaluation of a fit, as logged: steps are per-replica optimiser steps (federated: rounds).
struct FitRecord {
  int64_t step = 0;
  int64_t samples = 0;      // training rows processed by all replicas so far
  double train_loss = 0.0;  // rank 0's mean minibatch loss since the previous record
  Evaluation test;          // rank 0's replica on the test set
  sync::SyncStats sync;     // rank 0's bytes and rounds so far
  double seconds = 0.0;     // wall time since training started
  int64_t batch_size = 0;   // rows per replica and step at this point (adaptive schedules change it)
  double learning_rate = 0.0;
  double top_eigenvalue = 0.0;  // abs/absa: the latest estimate of the loss's top Hessian eigenvalue (0: none yet)
};

struct FitResult {
  FitRecord final;               // the last evaluation
  int64_t steps_to_target = -1;  // step (round) of the first evaluation reaching fit.target_accuracy
  double seconds_to_target = -1.0;
  torch::Tensor parameters;          // rank 0's final flat parameters
  torch::Tensor running_statistics;  // and the replicas' mean batch-norm statistics (running_statistics.h)
};

// What the caller hears, on rank 0 only, from the training thread of rank 0.
struct FitCallbacks {
  std::function<void(int64_t step)> on_step;
  std::function<void(const FitRecord&)> on_evaluation;
  // `state` is every rank's (replica_state.h) beside rank 0's "parameters" and the averaged
  // "running_statistics" (if any): what a resumed fit continues from.
  std::function<void(int64_t step, const core::Checkpoint& state)> on_checkpoint;
  // Polled by rank 0 at every evaluation step and between them about every 0.25 s of steps (a
  // count rank 0 measures and broadcasts with each evaluation's decision; every step until the
  // first); true makes that step the last one, evaluated and checkpointed (a signal asking the
  // fit to stop).
  std::function<bool()> should_stop;
};

// The bookkeeping a fit loop shares with every other: after each step (or round) it collects
// the loss, and every fit.eval_interval steps the replicas average their batch-norm statistics
// (running_statistics.h) and rank 0 evaluates its replica on the test set,
// decides whether to stop (the last step, or the target accuracy reached) and whether to
// checkpoint; the decisions are broadcast so that every rank stops at the same step and takes
// part in gathering the checkpoint: every rank's state (the loop's, through the saver, and the
// monitor's own) onto rank 0 (replica_state.h).
class FitMonitor {
 public:
  FitMonitor(const FitConfig& fit, comm::Communicator& communicator, const data::LabelledData& test,
             const FitCallbacks& callbacks, int64_t last_step);

  // After step `step` (1-based) with rank 0's minibatch loss. Returns false when training stops.
  // Collective at evaluation steps: every rank calls it after every step.
  bool after_step(int64_t step, int64_t samples, double loss, torch::nn::Sequential& model,
                  const torch::Tensor& parameters, const sync::SyncStats& stats);

  // Makes `step` the last one (a budget in epochs ends there); call before after_step(step).
  void finish_at(int64_t step) { last_step_ = step; }
  // What the next records report of the batch schedule.
  void note_schedule(int64_t batch_size, double learning_rate, double top_eigenvalue) {
    batch_size_ = batch_size;
    learning_rate_ = learning_rate;
    top_eigenvalue_ = top_eigenvalue;
  }

  // What the loop saves of itself (counters, replica, strategy, schedule, sampler) into this
  // rank's part of every checkpoint; set before the first step.
  void set_state_saver(std::function<void(core::Checkpoint&)> save) { save_state_ = std::move(save); }

  // A resumed fit: restores the monitor's part of this rank's state (the last checkpointed step,
  // the last record, the time and the schedule so far), and makes rank 0's `parameters` and
  // `model`'s statistics the result until the next evaluation. Throws core::CheckpointError
  // (with no path).
  void load(const core::Checkpoint& state, torch::nn::Sequential& model, const torch::Tensor& parameters);

  const FitResult& result() const { return result_; }

 private:
  void save(core::Checkpoint& state) const;

  const FitConfig& fit_;
  comm::Communicator& communicator_;
  const data::LabelledData& test_;
  const FitCallbacks& callbacks_;
  int64_t last_step_;
  core::Stopwatch clock_;
  double seconds_before_ = 0.0;  // of the runs this one resumed
  double loss_sum_ = 0.0;
  int64_t loss_count_ = 0;
  int64_t last_checkpoint_ = 0;
  int64_t poll_every_ = 1;  // steps between stop polls (collective), from rank 0's last decision
  double seconds_at_evaluation_ = 0.0;
  int64_t step_at_evaluation_ = 0;
  int64_t batch_size_ = 0;
  double learning_rate_ = 0.0;
  double top_eigenvalue_ = 0.0;
  FitResult result_;
  std::function<void(core::Checkpoint&)> save_state_;
};

}  // namespace concord::supervised
