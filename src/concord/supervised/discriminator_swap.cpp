#include "concord/supervised/discriminator_swap.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>

#include <torch/torch.h>

#include "concord/core/rng.h"

namespace concord::supervised {
namespace {

// Tag of the swap messages; ranks exchange one message per swap, in order, so one tag suffices.
constexpr int kSwapTag = 7301;

void check_permutation(const std::vector<int>& permutation, int world_size) {
  if (!is_permutation(permutation, world_size)) {
    std::string text;
    for (const int index : permutation) text += (text.empty() ? "" : " ") + std::to_string(index);
    throw std::invalid_argument("discriminator swap: [" + text + "] is not a permutation of " +
                                std::to_string(world_size) + " ranks");
  }
}

}  // namespace

bool is_permutation(const std::vector<int>& indices, int size) {
  if (static_cast<int64_t>(indices.size()) != size) return false;
  std::vector<bool> seen(static_cast<size_t>(size), false);
  for (const int index : indices) {
    if (index < 0 || index >= size || seen[static_cast<size_t>(index)]) return false;
    seen[static_cast<size_t>(index)] = true;
  }
  return true;
}

std::vector<int> swap_permutation(int pairs, uint64_t seed, int64_t swap_index) {
  core::Rng rng(core::derive_seed(seed, static_cast<uint64_t>(swap_index)));
  std::vector<int> permutation(static_cast<size_t>(pairs));
  std::iota(permutation.begin(), permutation.end(), 0);
  for (int64_t i = pairs - 1; i > 0; --i) {
    std::swap(permutation[static_cast<size_t>(i)], permutation[static_cast<size_t>(core::uniform_index(rng, i + 1))]);
  }
  return permutation;
}

void exchange_discriminator(comm::Communicator& communicator, const std::vector<int>& permutation,
                            const std::vector<torch::Tensor>& state) {
  const int rank = communicator.rank();
  check_permutation(permutation, communicator.world_size());
  const int source = permutation[static_cast<size_t>(rank)];
  if (source == rank) return;
  // The rank whose new discriminator is ours.
  const int destination =
      static_cast<int>(std::find(permutation.begin(), permutation.end(), rank) - permutation.begin());

  std::vector<torch::Tensor> flat;
  for (const auto& tensor : state) flat.push_back(tensor.detach().reshape(-1));
  const torch::Tensor outgoing = torch::cat(flat).contiguous();
  const torch::Tensor incoming = torch::empty_like(outgoing);
  auto sent = communicator.send_async(outgoing, destination, kSwapTag);
  auto received = communicator.recv_async(incoming, source, kSwapTag);
  received->wait();
  sent->wait();

  torch::NoGradGuard no_grad;
  int64_t offset = 0;
  for (const auto& tensor : state) {
    tensor.copy_(incoming.narrow(0, offset, tensor.numel()).view_as(tensor));
    offset += tensor.numel();
  }
}

}  // namespace concord::supervised
