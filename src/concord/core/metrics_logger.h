#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "concord/core/csv_writer.h"
#include "concord/core/tensorboard_writer.h"

namespace concord::core {

// Fans one log(step, values) call out to the run's metric sinks:
//
//   log(step, {name: value}) -> run_dir/metrics.csv            (wide CSV, when `csv`)
//                            -> run_dir/events.out.tfevents.*  (TensorBoard, when `tensorboard`)
//
// Both sinks get the same wall time, and both are flushed after every call, so a crash loses at
// most the call in progress. The constructor creates `run_dir` if needed; sink errors surface as
// std::runtime_error naming the file. Thread-safe: concurrent log() calls are serialised, so the
// sinks see calls in the same order.
class MetricsLogger {
 public:
  // `append` continues an existing metrics.csv (a resumed run); TensorBoard always starts a new
  // event file, which TensorBoard reads together with the old ones.
  MetricsLogger(const std::filesystem::path& run_dir, bool csv, bool tensorboard, bool append = false);

  void log(int64_t step, const std::map<std::string, double>& values);

  // A run resumed from a checkpoint at `step` logs the steps after it again: the CSV loses its
  // rows beyond `step`, and TensorBoard is told (a SessionLog START) to drop them from the older
  // event files, so that neither shows the step count going backwards.
  void resume_at(int64_t step);

  // Null when that sink is disabled.
  const CsvWriter* csv_writer() const { return csv_.get(); }
  const TensorBoardWriter* tensorboard_writer() const { return tensorboard_.get(); }

 private:
  std::mutex mutex_;
  std::unique_ptr<CsvWriter> csv_;
  std::unique_ptr<TensorBoardWriter> tensorboard_;
};

}  // namespace concord::core
