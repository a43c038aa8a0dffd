#include "concord/data/batch_sampler.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

namespace concord::data {

ShuffledBatches::ShuffledBatches(int64_t size, int64_t batch_size, uint64_t seed)
    : size_(size),
      batch_size_(batch_size == 0 ? size : batch_size),
      rng_(seed),
      order_(static_cast<size_t>(std::max<int64_t>(size, 0))) {
  if (size < 1 || batch_size < 0) {
    throw std::invalid_argument("ShuffledBatches: need size >= 1 and batch_size >= 0, got size = " +
                                std::to_string(size) + ", batch_size = " + std::to_string(batch_size));
  }
  std::iota(order_.begin(), order_.end(), int64_t{0});
  reshuffle();
}

void ShuffledBatches::reshuffle() {
  for (size_t i = order_.size(); i > 1; --i) {
    std::swap(order_[i - 1], order_[static_cast<size_t>(core::uniform_index(rng_, static_cast<int64_t>(i)))]);
  }
  position_ = 0;
}

torch::Tensor ShuffledBatches::next() {
  if (position_ >= size_) reshuffle();
  const int64_t end = std::min(size_, position_ + batch_size_);
  std::vector<int64_t> batch(order_.begin() + position_, order_.begin() + end);
  position_ = end;
  return torch::tensor(batch, torch::kInt64);
}

}  // namespace concord::data
