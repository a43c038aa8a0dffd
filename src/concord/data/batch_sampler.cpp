#include "concord/data/batch_sampler.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

#include "concord/core/checkpoint.h"
#include "concord/core/checkpoint_fields.h"

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

void ShuffledBatches::save(core::Checkpoint& checkpoint, const std::string& name) const {
  checkpoint.metadata[name] = {
      {"batch_size", batch_size_}, {"position", position_}, {"generator", core::rng_state(rng_)}};
  checkpoint.tensors[name + ".order"] = torch::tensor(order_, torch::kInt64);
}

void ShuffledBatches::load(const core::Checkpoint& checkpoint, const std::string& name) {
  const torch::Tensor order =
      core::checkpoint_tensor(checkpoint, name + ".order", torch::empty({size_}, torch::kInt64));
  const int64_t batch_size = core::metadata_int(checkpoint, name, "batch_size");
  const int64_t position = core::metadata_int(checkpoint, name, "position");
  if (batch_size != batch_size_ || position < 0 || position > size_) {
    throw core::CheckpointError(core::CheckpointError::Kind::kCorrupt, {},
                                "metadata '" + name + "' has batch_size " + std::to_string(batch_size) +
                                    " and position " + std::to_string(position) + ", expected batch_size " +
                                    std::to_string(batch_size_) + " and a position in [0, " + std::to_string(size_) +
                                    "]");
  }
  core::restore_rng(rng_, core::metadata_string(checkpoint, name, "generator"), name + ".generator");
  const torch::Tensor contiguous = order.contiguous();
  order_.assign(contiguous.data_ptr<int64_t>(), contiguous.data_ptr<int64_t>() + size_);
  position_ = position;
}

}  // namespace concord::data
