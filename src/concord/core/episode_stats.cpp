#include "concord/core/episode_stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace concord::core {

void EpisodeStats::add(double episode_return, int64_t episode_length) {
  min_return_ = count_ ? std::min(min_return_, episode_return) : episode_return;
  max_return_ = count_ ? std::max(max_return_, episode_return) : episode_return;
  ++count_;
  return_sum_ += episode_return;
  return_square_sum_ += episode_return * episode_return;
  length_sum_ += episode_length;
  recent_returns_.push_back(episode_return);
  recent_lengths_.push_back(episode_length);
  if (static_cast<int>(recent_returns_.size()) > window_) {
    recent_returns_.pop_front();
    recent_lengths_.pop_front();
  }
}

std::optional<double> EpisodeStats::recent_mean_return() const {
  if (recent_returns_.empty()) return std::nullopt;
  return std::accumulate(recent_returns_.begin(), recent_returns_.end(), 0.0) /
         static_cast<double>(recent_returns_.size());
}

std::optional<double> EpisodeStats::recent_mean_length() const {
  if (recent_lengths_.empty()) return std::nullopt;
  return static_cast<double>(std::accumulate(recent_lengths_.begin(), recent_lengths_.end(), int64_t{0})) /
         static_cast<double>(recent_lengths_.size());
}

double EpisodeStats::std_return() const {
  if (count_ == 0) return 0.0;
  const double mean = mean_return();
  return std::sqrt(std::max(0.0, return_square_sum_ / static_cast<double>(count_) - mean * mean));
}

}  // namespace concord::core
