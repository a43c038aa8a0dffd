#pragma once

#include <cstdint>
#include <vector>

#include <torch/types.h>

#include "concord/comm/communicator.h"

namespace concord::supervised {

// GAP's swap (Im et al. 2016): G pairs, one per rank, each train a generator against "their"
// discriminator; every S updates the discriminators move to other pairs by a random permutation,
// so that each generator meets discriminators trained against the others' samples.
//
//   swap k:  permutation = swap_permutation(G, seed, k)   (the same on every rank: no vote)
//            rank r's discriminator state  <-  rank permutation[r]'s
//
// The state is every tensor that belongs to the discriminator rather than the pair: its flat
// parameters and its optimiser's moments (all pairs take the same number of steps, so Adam's step
// count needs no moving).

// A uniformly random permutation of [0, pairs) drawn from core::derive_seed(seed, swap_index), by
// Fisher-Yates: a function of its arguments only, so every rank draws the same one.
std::vector<int> swap_permutation(int pairs, uint64_t seed, int64_t swap_index);

// Whether `indices` holds each of 0 .. size - 1 exactly once.
bool is_permutation(const std::vector<int>& indices, int size);

// Afterwards this rank's `state` tensors hold the values rank permutation[rank()] held before.
// A collective: every rank calls it with the same permutation (of [0, world_size)) and tensors of
// the same shapes and dtype (float). One message out and one in per rank, by point-to-point send
// and recv (none for a rank the permutation leaves in place). Throws std::invalid_argument when
// `permutation` is not a permutation of the ranks.
void exchange_discriminator(comm::Communicator& communicator, const std::vector<int>& permutation,
                            const std::vector<torch::Tensor>& state);

}  // namespace concord::supervised
