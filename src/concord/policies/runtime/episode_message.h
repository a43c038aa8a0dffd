#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <torch/types.h>

namespace concord::policies::runtime {

// (return, length) of finished episodes.
using FinishedEpisodes = std::vector<std::pair<double, int64_t>>;

// The episodes an actor process finished during a rollout or segment, as one message: float64
// [1 + 2 * capacity], the count, then (return, length) pairs. Throws std::invalid_argument if
// there are more than `capacity`.
torch::Tensor pack_episodes(const FinishedEpisodes& finished, int64_t capacity);

// The episodes of a received message. Another process wrote it, so it is checked before it is
// read: a count in [0, capacity], finite returns, lengths of at least 1. Throws
// std::runtime_error "<sender> sent ..." otherwise.
FinishedEpisodes unpack_episodes(const torch::Tensor& message, const std::string& sender);

}  // namespace concord::policies::runtime
