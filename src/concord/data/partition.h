#pragma once

#include <cstdint>
#include <vector>

#include <torch/types.h>

namespace concord::data {

// How a training set is divided among workers or federated clients. Each function returns one
// int64 index tensor per part (rows of the data set); together they cover every row once, except
// the remainder rows label_sorted_shards drops when the size does not divide evenly.

// IID: a random permutation (core::Rng seeded with `seed`) cut into `parts` contiguous pieces
// whose sizes differ by at most one. Throws std::invalid_argument when parts < 1 or parts > size.
std::vector<torch::Tensor> iid_partition(int64_t size, int parts, uint64_t seed);

// Non-IID, McMahan et al.'s pathological partition: rows sorted by label (stably), cut into
// parts * shards_per_part shards of floor(size / (parts * shards_per_part)) rows, and each part
// given shards_per_part shards drawn at random without replacement. With 2 shards per part, most
// parts hold examples of only two digits. Throws std::invalid_argument when a shard would be
// empty or an argument is < 1.
std::vector<torch::Tensor> label_sorted_shards(const torch::Tensor& labels, int parts, int shards_per_part,
                                               uint64_t seed);

}  // namespace concord::data
