#include "concord/data/partition.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

#include "concord/core/rng.h"

namespace concord::data {
namespace {

void shuffle(std::vector<int64_t>& values, uint64_t seed) {
  core::Rng rng(seed);
  for (size_t i = values.size(); i > 1; --i) {
    std::swap(values[i - 1], values[static_cast<size_t>(core::uniform_index(rng, static_cast<int64_t>(i)))]);
  }
}

}  // namespace

std::vector<torch::Tensor> iid_partition(int64_t size, int parts, uint64_t seed) {
  if (parts < 1 || parts > size) {
    throw std::invalid_argument("iid_partition: cannot cut " + std::to_string(size) + " rows into " +
                                std::to_string(parts) + " non-empty parts");
  }
  std::vector<int64_t> order(static_cast<size_t>(size));
  std::iota(order.begin(), order.end(), int64_t{0});
  shuffle(order, seed);
  const torch::Tensor permutation = torch::tensor(order, torch::kInt64);
  std::vector<torch::Tensor> result;
  for (int part = 0; part < parts; ++part) {
    result.push_back(permutation.slice(0, size * part / parts, size * (part + 1) / parts).clone());
  }
  return result;
}

std::vector<torch::Tensor> label_sorted_shards(const torch::Tensor& labels, int parts, int shards_per_part,
                                               uint64_t seed) {
  const int64_t size = labels.size(0);
  const int64_t shards = int64_t{parts} * shards_per_part;
  if (parts < 1 || shards_per_part < 1 || shards > size) {
    throw std::invalid_argument("label_sorted_shards: cannot cut " + std::to_string(size) + " rows into " +
                                std::to_string(parts) + " parts of " + std::to_string(shards_per_part) +
                                " non-empty shards");
  }
  const torch::Tensor cpu_labels = labels.to(torch::kCPU, torch::kInt64).contiguous();
  const int64_t* label = cpu_labels.data_ptr<int64_t>();
  std::vector<int64_t> by_label(static_cast<size_t>(size));
  std::iota(by_label.begin(), by_label.end(), int64_t{0});
  std::stable_sort(by_label.begin(), by_label.end(), [label](int64_t a, int64_t b) { return label[a] < label[b]; });
  const torch::Tensor sorted = torch::tensor(by_label, torch::kInt64);

  std::vector<int64_t> shard_order(static_cast<size_t>(shards));
  std::iota(shard_order.begin(), shard_order.end(), int64_t{0});
  shuffle(shard_order, seed);
  const int64_t shard_size = size / shards;
  std::vector<torch::Tensor> result;
  for (int part = 0; part < parts; ++part) {
    std::vector<torch::Tensor> pieces;
    for (int s = 0; s < shards_per_part; ++s) {
      const int64_t shard = shard_order[static_cast<size_t>(part * shards_per_part + s)];
      pieces.push_back(sorted.slice(0, shard * shard_size, (shard + 1) * shard_size));
    }
    result.push_back(torch::cat(pieces));
  }
  return result;
}

}  // namespace concord::data
