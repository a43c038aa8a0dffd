#pragma once

#include <chrono>

namespace concord::core {

// Wall time on the monotonic clock, immune to system clock changes.
class Stopwatch {
 public:
  Stopwatch() : start_(Clock::now()) {}
  void restart() { start_ = Clock::now(); }
  double elapsed_seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

 private:
  using Clock = std::chrono::steady_clock;
  Clock::time_point start_;
};

// `seconds` (a config's timeout) as a steady-clock duration, for deadlines and waits.
inline std::chrono::steady_clock::duration steady_duration(double seconds) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
}

}  // namespace concord::core
