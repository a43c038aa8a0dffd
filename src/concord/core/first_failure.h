#pragma once

#include <atomic>
#include <exception>
#include <mutex>
#include <utility>

namespace concord::core {

// The first error among a run's threads: the one the run rethrows once it has joined them (the
// others are usually consequences of stopping). Thread-safe. Header-only.
class FirstFailure {
 public:
  // Keeps `error` unless an earlier one is kept.
  void record(std::exception_ptr error) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!error_) error_ = std::move(error);
    }
    failed_.store(true);
  }
  bool failed() const { return failed_.load(); }
  // Rethrows the kept error, if any; call it after joining the threads that record.
  void rethrow_if_any() const {
    std::lock_guard<std::mutex> lock(mutex_);
    if (error_) std::rethrow_exception(error_);
  }

 private:
  mutable std::mutex mutex_;
  std::exception_ptr error_;
  std::atomic<bool> failed_{false};
};

}  // namespace concord::core
