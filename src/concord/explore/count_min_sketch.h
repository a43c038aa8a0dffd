#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <torch/types.h>

#include "concord/core/config_fields.h"
#include "concord/explore/visit_counter.h"

namespace concord::explore {

// The sketch's shape (keys explore.sketch.<field>).
struct CountMinSketchConfig {
  int64_t tables = 6;              // tables, each of a different prime size
  int64_t table_size = 1'000'000;  // each table's size is one of the largest primes <= this

  static const core::ConfigFields<CountMinSketchConfig>& fields();
};

// A count-min sketch over binary codes, as in the reference code of Tang et al. (2017): several
// tables of prime sizes p_1 > p_2 > ...; a code b (bits b_0 .. b_{k-1}) is read as the integer
// sum_j b_j 2^j and lands in cell (that integer mod p_t) of table t. A visit increments its
// cell in every table; the count of a code is the minimum over the tables, which overestimates
// only where every table has a collision.
//
// The tables are one array of atomic int64 cells, so threads add and read without locks
// (relaxed increments: a count is a sum, and no other memory is published through it).
//
// Merging across ranks is exact: cells are sums, so the allreduced per-interval increments make
// every rank's tables equal to those of one sketch that saw every visit, provided all ranks
// started from the same tables (zeros, or the same checkpoint).
class CountMinSketch final : public VisitCounter {
 public:
  // `tables` tables whose sizes are the largest primes <= max_table_size (the paper's
  // 999931 .. 999983 for CountMinSketchConfig's defaults). Throws std::invalid_argument unless
  // bits in [1, 1024], tables in [1, 64] and max_table_size in [2, 2^31).
  CountMinSketch(int64_t bits, int64_t tables, int64_t max_table_size);

  void add(const torch::Tensor& codes) override;
  torch::Tensor counts(const torch::Tensor& codes) const override;
  void merge_increments(comm::Communicator& communicator) override;
  void save(core::Checkpoint& checkpoint, const std::string& prefix) const override;
  void load(const core::Checkpoint& checkpoint, const std::string& prefix) override;

  const std::vector<int64_t>& table_sizes() const { return table_sizes_; }
  // Every cell, table after table: int64 [sum of table sizes].
  torch::Tensor cells() const;

 private:
  // cell_indices[t] for one code row: where it lands in each table (offsets included).
  void cell_indices(const uint8_t* code, int64_t* indices) const;
  void check_codes(const torch::Tensor& codes) const;
  void add_cells(const torch::Tensor& increments);

  int64_t bits_;
  std::vector<int64_t> table_sizes_;
  std::vector<int64_t> table_offsets_;
  // powers_[t * bits_ + j] = 2^j mod table_sizes_[t].
  std::vector<int64_t> powers_;
  int64_t num_cells_;
  std::unique_ptr<std::atomic<int64_t>[]> cells_;

  std::mutex merge_mutex_;      // one merge at a time
  torch::Tensor merged_cells_;  // the cells as of the last merge (or load): the baseline of increments
};

// The `count` largest primes <= max_value, largest first. Throws std::invalid_argument if there
// are not that many.
std::vector<int64_t> largest_primes(int64_t count, int64_t max_value);

}  // namespace concord::explore
