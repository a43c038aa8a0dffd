#include "concord/core/metrics_logger.h"

#include <stdexcept>
#include <system_error>

namespace concord::core {

MetricsLogger::MetricsLogger(const std::filesystem::path& run_dir, bool csv, bool tensorboard, bool append) {
  std::error_code error;
  std::filesystem::create_directories(run_dir, error);
  if (error) {
    throw std::runtime_error("cannot create run directory '" + run_dir.string() + "': " + error.message());
  }
  if (csv) {
    csv_ = std::make_unique<CsvWriter>(run_dir / "metrics.csv", append);
  }
  if (tensorboard) {
    tensorboard_ = std::make_unique<TensorBoardWriter>(run_dir);
  }
}

void MetricsLogger::resume_at(int64_t step) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (csv_) {
    csv_->drop_rows_after(step);
  }
  if (tensorboard_) {
    tensorboard_->add_session_start(step + 1);
    tensorboard_->flush();
  }
}

void MetricsLogger::log(int64_t step, const std::map<std::string, double>& values) {
  const double wall_time = unix_time_now();
  std::lock_guard<std::mutex> lock(mutex_);
  if (csv_) {
    csv_->write_row(step, wall_time, values);
  }
  if (tensorboard_) {
    tensorboard_->add_scalars(values, step, wall_time);
    tensorboard_->flush();
  }
}

}  // namespace concord::core
