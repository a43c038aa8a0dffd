#include "concord/policies/runtime/episode_message.h"

#include <cmath>
#include <stdexcept>

#include <torch/torch.h>

namespace concord::policies::runtime {

torch::Tensor pack_episodes(const FinishedEpisodes& finished, int64_t capacity) {
  if (static_cast<int64_t>(finished.size()) > capacity) {
    throw std::invalid_argument("pack_episodes: " + std::to_string(finished.size()) + " episodes, room for " +
                                std::to_string(capacity));
  }
  torch::Tensor message = torch::zeros({1 + 2 * capacity}, torch::kFloat64);
  double* values = message.data_ptr<double>();
  values[0] = static_cast<double>(finished.size());
  for (size_t i = 0; i < finished.size(); ++i) {
    values[1 + 2 * i] = finished[i].first;
    values[2 + 2 * i] = static_cast<double>(finished[i].second);
  }
  return message;
}

FinishedEpisodes unpack_episodes(const torch::Tensor& message, const std::string& sender) {
  if (message.scalar_type() != torch::kFloat64 || message.dim() != 1 || message.numel() < 1 ||
      message.numel() % 2 != 1 || !message.is_contiguous()) {
    throw std::logic_error("unpack_episodes: the buffer is not float64 [1 + 2 * capacity]");
  }
  const int64_t capacity = (message.numel() - 1) / 2;
  const double* values = message.data_ptr<double>();
  const double count = values[0];
  if (!(count >= 0.0 && count <= static_cast<double>(capacity)) || count != std::floor(count)) {
    throw std::runtime_error(sender + " sent an episode count of " + std::to_string(count) +
                             ", not a whole number in [0, " + std::to_string(capacity) + "]");
  }
  FinishedEpisodes finished;
  for (int64_t i = 0; i < static_cast<int64_t>(count); ++i) {
    const double episode_return = values[1 + 2 * i];
    const double length = values[2 + 2 * i];
    if (!std::isfinite(episode_return) || !(length >= 1.0 && length <= 9.0e15) || length != std::floor(length)) {
      throw std::runtime_error(sender + " sent episode " + std::to_string(i) + " with return " +
                               std::to_string(episode_return) + " and length " + std::to_string(length));
    }
    finished.emplace_back(episode_return, static_cast<int64_t>(length));
  }
  return finished;
}

}  // namespace concord::policies::runtime
