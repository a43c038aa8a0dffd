#pragma once

#include <cstdint>
#include <deque>
#include <optional>

namespace concord::core {

// Statistics of finished episodes: totals over the whole run, and the mean of the most recent
// `window` episodes (the "recent return" shown on progress bars; 100 as in SB3 and RL Zoo).
// Not thread-safe.
class EpisodeStats {
 public:
  explicit EpisodeStats(int window = 100) : window_(window) {}

  void add(double episode_return, int64_t episode_length);

  int64_t count() const { return count_; }
  // nullopt until the first episode ends.
  std::optional<double> recent_mean_return() const;
  std::optional<double> recent_mean_length() const;
  double mean_return() const { return count_ ? return_sum_ / static_cast<double>(count_) : 0.0; }
  // Population standard deviation of all returns.
  double std_return() const;
  double min_return() const { return min_return_; }
  double max_return() const { return max_return_; }
  double mean_length() const { return count_ ? static_cast<double>(length_sum_) / static_cast<double>(count_) : 0.0; }

 private:
  int window_;
  std::deque<double> recent_returns_;
  std::deque<int64_t> recent_lengths_;
  int64_t count_ = 0;
  double return_sum_ = 0.0;
  double return_square_sum_ = 0.0;
  int64_t length_sum_ = 0;
  double min_return_ = 0.0;
  double max_return_ = 0.0;
};

}  // namespace concord::core
