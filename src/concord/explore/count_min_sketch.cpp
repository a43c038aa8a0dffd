#include "concord/explore/count_min_sketch.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include <torch/torch.h>

#include "concord/explore/checkpoint_tensor.h"

namespace concord::explore {
namespace {

bool is_prime(int64_t n) {
  if (n < 2) return false;
  for (int64_t d = 2; d * d <= n; ++d) {
    if (n % d == 0) return false;
  }
  return true;
}

}  // namespace

std::vector<int64_t> largest_primes(int64_t count, int64_t max_value) {
  std::vector<int64_t> primes;
  for (int64_t n = max_value; n >= 2 && static_cast<int64_t>(primes.size()) < count; --n) {
    if (is_prime(n)) primes.push_back(n);
  }
  if (static_cast<int64_t>(primes.size()) < count) {
    throw std::invalid_argument("there are fewer than " + std::to_string(count) +
                                " primes <= " + std::to_string(max_value));
  }
  return primes;
}

const core::ConfigFields<CountMinSketchConfig>& CountMinSketchConfig::fields() {
  static const core::ConfigFields<CountMinSketchConfig> kFields = {
      {"tables", &CountMinSketchConfig::tables, "Count-min sketch tables"},
      {"table_size", &CountMinSketchConfig::table_size,
       "Each table's size is one of the largest primes at or below this"},
  };
  return kFields;
}

CountMinSketch::CountMinSketch(int64_t bits, int64_t tables, int64_t max_table_size) : bits_(bits) {
  if (bits < 1 || bits > 1024 || tables < 1 || tables > 64 || max_table_size < 2 ||
      max_table_size >= (int64_t{1} << 31)) {
    throw std::invalid_argument("CountMinSketch: bits=" + std::to_string(bits) +
                                " must be in [1, 1024], tables=" + std::to_string(tables) +
                                " in [1, 64], table_size=" + std::to_string(max_table_size) + " in [2, 2^31)");
  }
  table_sizes_ = largest_primes(tables, max_table_size);
  num_cells_ = 0;
  for (const int64_t size : table_sizes_) {
    table_offsets_.push_back(num_cells_);
    num_cells_ += size;
    // 2^j mod p by doubling, so codes of any length index exactly (no 64-bit overflow).
    int64_t power = 1 % size;
    for (int64_t j = 0; j < bits; ++j) {
      powers_.push_back(power);
      power = (power * 2) % size;
    }
  }
  cells_.reset(new std::atomic<int64_t>[static_cast<size_t>(num_cells_)]);
  for (int64_t i = 0; i < num_cells_; ++i) cells_[static_cast<size_t>(i)].store(0, std::memory_order_relaxed);
  merged_cells_ = torch::zeros({num_cells_}, torch::kInt64);
}

void CountMinSketch::check_codes(const torch::Tensor& codes) const {
  if (codes.dim() != 2 || codes.size(1) != bits_ || codes.scalar_type() != torch::kUInt8) {
    throw std::invalid_argument("CountMinSketch of " + std::to_string(bits_) + "-bit codes: expected uint8 codes [N, " +
                                std::to_string(bits_) + "]");
  }
}

void CountMinSketch::cell_indices(const uint8_t* code, int64_t* indices) const {
  for (size_t t = 0; t < table_sizes_.size(); ++t) {
    const int64_t* powers = powers_.data() + static_cast<int64_t>(t) * bits_;
    // Each term is below p < 2^31, so 1024 of them cannot overflow int64.
    int64_t sum = 0;
    for (int64_t j = 0; j < bits_; ++j) sum += code[j] != 0 ? powers[j] : 0;
    indices[t] = table_offsets_[t] + sum % table_sizes_[t];
  }
}

void CountMinSketch::add(const torch::Tensor& codes) {
  check_codes(codes);
  const torch::Tensor rows = codes.to(torch::kCPU).contiguous();
  const uint8_t* data = rows.data_ptr<uint8_t>();
  std::vector<int64_t> indices(table_sizes_.size());
  for (int64_t row = 0; row < rows.size(0); ++row) {
    cell_indices(data + row * bits_, indices.data());
    for (const int64_t index : indices) cells_[static_cast<size_t>(index)].fetch_add(1, std::memory_order_relaxed);
  }
}

torch::Tensor CountMinSketch::counts(const torch::Tensor& codes) const {
  check_codes(codes);
  const torch::Tensor rows = codes.to(torch::kCPU).contiguous();
  const uint8_t* data = rows.data_ptr<uint8_t>();
  torch::Tensor result = torch::empty({rows.size(0)}, torch::kInt64);
  int64_t* out = result.data_ptr<int64_t>();
  std::vector<int64_t> indices(table_sizes_.size());
  for (int64_t row = 0; row < rows.size(0); ++row) {
    cell_indices(data + row * bits_, indices.data());
    int64_t count = std::numeric_limits<int64_t>::max();
    for (const int64_t index : indices) {
      count = std::min(count, cells_[static_cast<size_t>(index)].load(std::memory_order_relaxed));
    }
    out[row] = count;
  }
  return result;
}

torch::Tensor CountMinSketch::cells() const {
  torch::Tensor result = torch::empty({num_cells_}, torch::kInt64);
  int64_t* out = result.data_ptr<int64_t>();
  for (int64_t i = 0; i < num_cells_; ++i) out[i] = cells_[static_cast<size_t>(i)].load(std::memory_order_relaxed);
  return result;
}

void CountMinSketch::add_cells(const torch::Tensor& increments) {
  const int64_t* values = increments.data_ptr<int64_t>();
  for (int64_t i = 0; i < num_cells_; ++i) {
    if (values[i] != 0) cells_[static_cast<size_t>(i)].fetch_add(values[i], std::memory_order_relaxed);
  }
}

void CountMinSketch::merge_increments(comm::Communicator& communicator) {
  std::lock_guard<std::mutex> lock(merge_mutex_);
  // Increments since the last merge; this rank's own are already in its cells, so only the other
  // ranks' part of the sum is added (atomically: other threads may be adding meanwhile).
  const torch::Tensor own = cells() - merged_cells_;
  torch::Tensor everyone = own.clone();
  communicator.allreduce(everyone, comm::ReduceOp::kSum);
  add_cells(everyone - own);
  merged_cells_ += everyone;
}

void CountMinSketch::save(core::Checkpoint& checkpoint, const std::string& prefix) const {
  checkpoint.tensors[prefix + "sketch"] = cells();
}

void CountMinSketch::load(const core::Checkpoint& checkpoint, const std::string& prefix) {
  const torch::Tensor saved =
      required_tensor(checkpoint, prefix + "sketch", {num_cells_},
                      "explore.sketch.tables and explore.sketch.table_size must match the checkpoint's")
          .to(torch::kInt64)
          .contiguous();
  std::lock_guard<std::mutex> lock(merge_mutex_);
  const int64_t* values = saved.data_ptr<int64_t>();
  for (int64_t i = 0; i < num_cells_; ++i) cells_[static_cast<size_t>(i)].store(values[i], std::memory_order_relaxed);
  merged_cells_ = saved.clone();
}

}  // namespace concord::explore
