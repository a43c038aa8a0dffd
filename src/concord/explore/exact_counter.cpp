#include "concord/explore/exact_counter.h"

#include <functional>
#include <stdexcept>
#include <vector>

#include <torch/torch.h>

namespace concord::explore {
namespace {

std::string key_of(const uint8_t* code, int64_t bits) {
  return std::string(reinterpret_cast<const char*>(code), static_cast<size_t>(bits));
}

}  // namespace

ExactCounter::ExactCounter(int64_t bits) : bits_(bits) {
  if (bits < 1 || bits > 1024) {
    throw std::invalid_argument("ExactCounter: bits=" + std::to_string(bits) + " must be in [1, 1024]");
  }
}

void ExactCounter::check_codes(const torch::Tensor& codes) const {
  if (codes.dim() != 2 || codes.size(1) != bits_ || codes.scalar_type() != torch::kUInt8) {
    throw std::invalid_argument("ExactCounter of " + std::to_string(bits_) + "-bit codes: expected uint8 codes [N, " +
                                std::to_string(bits_) + "]");
  }
}

ExactCounter::Stripe& ExactCounter::stripe_of(const std::string& key) const {
  return stripes_[std::hash<std::string>{}(key) % kStripes];
}

void ExactCounter::add(const torch::Tensor& codes) {
  check_codes(codes);
  const torch::Tensor rows = codes.to(torch::kCPU).contiguous();
  const uint8_t* data = rows.data_ptr<uint8_t>();
  for (int64_t row = 0; row < rows.size(0); ++row) {
    std::string key = key_of(data + row * bits_, bits_);
    Stripe& stripe = stripe_of(key);
    std::lock_guard<std::mutex> lock(stripe.mutex);
    ++stripe.counts[std::move(key)];
  }
}

torch::Tensor ExactCounter::counts(const torch::Tensor& codes) const {
  check_codes(codes);
  const torch::Tensor rows = codes.to(torch::kCPU).contiguous();
  const uint8_t* data = rows.data_ptr<uint8_t>();
  torch::Tensor result = torch::zeros({rows.size(0)}, torch::kInt64);
  int64_t* out = result.data_ptr<int64_t>();
  for (int64_t row = 0; row < rows.size(0); ++row) {
    const std::string key = key_of(data + row * bits_, bits_);
    const Stripe& stripe = stripe_of(key);
    std::lock_guard<std::mutex> lock(stripe.mutex);
    const auto found = stripe.counts.find(key);
    if (found != stripe.counts.end()) out[row] = found->second;
  }
  return result;
}

void ExactCounter::merge_increments(comm::Communicator&) {
  throw std::logic_error(
      "explore.counter = \"exact\" cannot merge counts across processes; use explore.counter = \"sketch\"");
}

int64_t ExactCounter::size() const {
  int64_t total = 0;
  for (const Stripe& stripe : stripes_) {
    std::lock_guard<std::mutex> lock(stripe.mutex);
    total += static_cast<int64_t>(stripe.counts.size());
  }
  return total;
}

void ExactCounter::save(core::Checkpoint& checkpoint, const std::string& prefix) const {
  std::vector<uint8_t> keys;
  std::vector<int64_t> counts;
  for (const Stripe& stripe : stripes_) {
    std::lock_guard<std::mutex> lock(stripe.mutex);
    for (const auto& [key, count] : stripe.counts) {
      keys.insert(keys.end(), key.begin(), key.end());
      counts.push_back(count);
    }
  }
  const auto rows = static_cast<int64_t>(counts.size());
  checkpoint.tensors[prefix + "exact_codes"] = torch::tensor(keys, torch::kUInt8).reshape({rows, bits_});
  checkpoint.tensors[prefix + "exact_counts"] = torch::tensor(counts, torch::kInt64);
}

void ExactCounter::load(const core::Checkpoint& checkpoint, const std::string& prefix) {
  const auto codes = checkpoint.tensors.find(prefix + "exact_codes");
  const auto counts = checkpoint.tensors.find(prefix + "exact_counts");
  if (codes == checkpoint.tensors.end() || counts == checkpoint.tensors.end() || codes->second.dim() != 2 ||
      codes->second.size(1) != bits_ || counts->second.numel() != codes->second.size(0)) {
    throw core::CheckpointError(core::CheckpointError::Kind::kTensorMissing, "",
                                "exploration state '" + prefix + "exact_codes' / 'exact_counts' of " +
                                    std::to_string(bits_) +
                                    "-bit codes is missing or mis-shaped (explore.counter and explore.simhash.k must "
                                    "match the checkpoint's)");
  }
  for (Stripe& stripe : stripes_) {
    std::lock_guard<std::mutex> lock(stripe.mutex);
    stripe.counts.clear();
  }
  const torch::Tensor rows = codes->second.to(torch::kUInt8).contiguous();
  const torch::Tensor values = counts->second.to(torch::kInt64).contiguous();
  for (int64_t row = 0; row < rows.size(0); ++row) {
    std::string key = key_of(rows.data_ptr<uint8_t>() + row * bits_, bits_);
    Stripe& stripe = stripe_of(key);
    std::lock_guard<std::mutex> lock(stripe.mutex);
    stripe.counts[std::move(key)] = values.data_ptr<int64_t>()[row];
  }
}

}  // namespace concord::explore
