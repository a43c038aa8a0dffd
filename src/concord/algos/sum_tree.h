#pragma once

#include <cstdint>
#include <vector>

namespace concord::algos {

// A fixed-capacity binary sum tree over non-negative priorities: the index structure of
// proportional prioritised replay (Schaul et al., 2016). Setting a leaf, the total and drawing
// the leaf under a given cumulative mass all take O(log capacity).
//
// Leaves 0 .. capacity - 1 start at priority 0. Sums are kept in double precision, and every
// set() recomputes each ancestor as the sum of its two children (never by adding a delta), so
// an internal node is always exactly sum(left child) + sum(right child), however many updates
// came before: no drift accumulates over millions of priority updates.
//
// Layout (read-only through sums(), for tests): a heap in one array. Node 1 is the root, node i
// has children 2i and 2i + 1, and leaf j is node leaf_offset() + j, where leaf_offset() is the
// smallest power of two >= capacity. Leaves beyond capacity are padding and stay 0, so a
// capacity that is not a power of two needs no special case.
//
// Not thread-safe: callers serialise access (ReplayBuffer holds its lock around every call).
class SumTree {
 public:
  // capacity >= 1; throws std::invalid_argument otherwise.
  explicit SumTree(int64_t capacity);

  int64_t capacity() const { return capacity_; }

  // Sets leaf `index` (in [0, capacity)) to `priority` (finite, >= 0). Throws
  // std::invalid_argument otherwise, changing nothing.
  void set(int64_t index, double priority);
  // The priority of leaf `index`; throws std::invalid_argument if it is out of range.
  double get(int64_t index) const;
  // The sum of all leaves.
  double total() const { return sums_[1]; }
  // The smallest positive leaf, or +infinity when every leaf is 0. Zero leaves are left out
  // because they can never be drawn (see find_prefix), and the use of this minimum is the
  // largest importance weight among the leaves that can be drawn.
  double min_positive() const { return mins_[1]; }

  // The leaf where the running sum of leaves 0, 1, 2, ... first exceeds `mass`: the smallest i
  // with get(0) + ... + get(i) > mass. For `mass` drawn uniformly from [0, total()), leaf i is
  // returned with probability get(i) / total().
  //
  // Robust at the edges: a zero leaf never makes the running sum exceed anything, so it is never
  // returned; a mass exactly on a boundary between leaves returns the leaf to the right; a mass
  // below 0 returns the first positive leaf, and one at or above total() (which rounding in the
  // caller's arithmetic can produce) the last positive leaf. Whatever the mass, the result is a
  // leaf with positive priority. Throws std::invalid_argument if total() is 0 or mass is NaN.
  int64_t find_prefix(double mass) const;

  // The heap described above (index 0 unused), for tests of the sum invariant.
  const std::vector<double>& sums() const { return sums_; }
  int64_t leaf_offset() const { return leaf_offset_; }

 private:
  void check_index(const char* fn, int64_t index) const;

  int64_t capacity_;
  int64_t leaf_offset_;
  std::vector<double> sums_;  // node -> sum of its leaves
  std::vector<double> mins_;  // node -> smallest positive leaf below it, +infinity if none
};

}  // namespace concord::algos
