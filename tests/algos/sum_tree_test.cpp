#include "concord/algos/sum_tree.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

#include "concord/core/rng.h"

namespace concord::algos {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// Every internal node is exactly the sum of its children (and the min of their positive
// minima), padding leaves are 0, and total() and min_positive() agree with a scan of the leaves.
void expect_invariants(const SumTree& tree) {
  const std::vector<double>& sums = tree.sums();
  const int64_t offset = tree.leaf_offset();
  ASSERT_EQ(static_cast<int64_t>(sums.size()), 2 * offset);
  for (int64_t node = 1; node < offset; ++node) {
    ASSERT_EQ(sums[node], sums[2 * node] + sums[2 * node + 1]) << "node " << node;
  }
  for (int64_t leaf = tree.capacity(); leaf < offset; ++leaf) ASSERT_EQ(sums[offset + leaf], 0.0) << "pad " << leaf;
  double smallest = kInfinity;
  for (int64_t i = 0; i < tree.capacity(); ++i) {
    if (tree.get(i) > 0.0) smallest = std::min(smallest, tree.get(i));
  }
  EXPECT_EQ(tree.min_positive(), smallest);
  EXPECT_EQ(tree.total(), sums[1]);
}

// The definition find_prefix implements: the smallest i whose running sum exceeds mass (for a
// mass in [0, total)), by a linear scan.
int64_t scan_prefix(const SumTree& tree, double mass) {
  double running = 0.0;
  int64_t last_positive = -1;
  for (int64_t i = 0; i < tree.capacity(); ++i) {
    running += tree.get(i);
    if (tree.get(i) > 0.0) last_positive = i;
    if (running > mass && tree.get(i) > 0.0) return i;
  }
  return last_positive;
}

TEST(SumTreeTest, InternalNodesAreExactSumsAfterRandomUpdates) {
  core::Rng rng(5);
  for (int64_t capacity : {1, 2, 7, 13, 64}) {
    SumTree tree(capacity);
    expect_invariants(tree);
    for (int update = 0; update < 2000; ++update) {
      const int64_t index = core::uniform_index(rng, capacity);
      // Arbitrary doubles (not just integers, so that rounding happens), and some zeros.
      const double priority = core::uniform(rng, 0.0, 1.0) < 0.2 ? 0.0 : core::uniform(rng, 0.0, 10.0);
      tree.set(index, priority);
      EXPECT_EQ(tree.get(index), priority);
      if (update % 50 == 0) expect_invariants(tree);
    }
    expect_invariants(tree);
  }
}

TEST(SumTreeTest, FindPrefixAtExactBoundaries) {
  // Leaves 1, 2, 3, 4: running sums 1, 3, 6, 10, so leaf 0 owns [0, 1), leaf 1 [1, 3),
  // leaf 2 [3, 6), leaf 3 [6, 10). A mass on a boundary belongs to the leaf on its right.
  SumTree tree(4);
  for (int64_t i = 0; i < 4; ++i) tree.set(i, static_cast<double>(i + 1));
  EXPECT_EQ(tree.total(), 10.0);
  EXPECT_EQ(tree.find_prefix(0.0), 0);
  EXPECT_EQ(tree.find_prefix(0.5), 0);
  EXPECT_EQ(tree.find_prefix(std::nextafter(1.0, 0.0)), 0);
  EXPECT_EQ(tree.find_prefix(1.0), 1);
  EXPECT_EQ(tree.find_prefix(std::nextafter(3.0, 0.0)), 1);
  EXPECT_EQ(tree.find_prefix(3.0), 2);
  EXPECT_EQ(tree.find_prefix(5.5), 2);
  EXPECT_EQ(tree.find_prefix(6.0), 3);
  EXPECT_EQ(tree.find_prefix(std::nextafter(10.0, 0.0)), 3);
  // Out of range, as rounding in a caller can produce: clamped to the first / last leaf.
  EXPECT_EQ(tree.find_prefix(10.0), 3);
  EXPECT_EQ(tree.find_prefix(1e9), 3);
  EXPECT_EQ(tree.find_prefix(-1.0), 0);

  // A sweep of 1000 evenly spaced masses (k + 0.5) / 100 hits each leaf in proportion to its
  // priority, exactly: 100, 200, 300, 400.
  std::vector<int> counts(4, 0);
  for (int k = 0; k < 1000; ++k) ++counts[tree.find_prefix((k + 0.5) / 100.0)];
  EXPECT_EQ(counts, (std::vector<int>{100, 200, 300, 400}));
}

TEST(SumTreeTest, ZeroPriorityLeavesAreNeverReturned) {
  // Zeros at the start, in the middle and at the end, and a zero subtree (leaves 4..7 of 8).
  SumTree tree(8);
  tree.set(1, 2.0);
  tree.set(3, 3.0);
  EXPECT_EQ(tree.find_prefix(0.0), 1);
  EXPECT_EQ(tree.find_prefix(-5.0), 1);
  EXPECT_EQ(tree.find_prefix(1.999), 1);
  EXPECT_EQ(tree.find_prefix(2.0), 3);  // the boundary skips the zero leaf 2
  EXPECT_EQ(tree.find_prefix(4.999), 3);
  EXPECT_EQ(tree.find_prefix(5.0), 3);  // at total: the last positive leaf, not padding or leaf 7
  EXPECT_EQ(tree.find_prefix(1e300), 3);
  EXPECT_EQ(tree.find_prefix(kInfinity), 3);

  // A leaf that was positive and is set back to 0 is no longer drawn.
  tree.set(3, 0.0);
  EXPECT_EQ(tree.find_prefix(4.0), 1);
  EXPECT_EQ(tree.min_positive(), 2.0);

  // Random sparse trees, random and adversarial masses: always a positive leaf, and the scan's
  // answer.
  core::Rng rng(11);
  for (int trial = 0; trial < 200; ++trial) {
    const int64_t capacity = 1 + core::uniform_index(rng, 20);
    SumTree sparse(capacity);
    for (int64_t i = 0; i < capacity; ++i) {
      if (core::uniform(rng, 0.0, 1.0) < 0.3) sparse.set(i, core::uniform(rng, 0.01, 3.0));
    }
    if (sparse.total() == 0.0) sparse.set(capacity - 1, 0.5);
    const double total = sparse.total();
    std::vector<double> masses = {0.0, -1.0, total, std::nextafter(total, 0.0), std::nextafter(total, 1e9)};
    for (int k = 0; k < 50; ++k) masses.push_back(core::uniform(rng, 0.0, total));
    for (double mass : masses) {
      const int64_t leaf = sparse.find_prefix(mass);
      ASSERT_GE(leaf, 0);
      ASSERT_LT(leaf, capacity);
      ASSERT_GT(sparse.get(leaf), 0.0) << "mass " << mass << " gave zero leaf " << leaf;
      if (mass >= 0.0 && mass < total) {
        EXPECT_EQ(leaf, scan_prefix(sparse, mass)) << "mass " << mass;
      }
    }
  }
}

TEST(SumTreeTest, CapacityNotAPowerOfTwo) {
  // Capacity 5 pads to 8 leaves; leaves 5..7 must never come back.
  SumTree tree(5);
  EXPECT_EQ(tree.leaf_offset(), 8);
  for (int64_t i = 0; i < 5; ++i) tree.set(i, 1.0);
  for (int64_t i = 0; i < 5; ++i) EXPECT_EQ(tree.find_prefix(i + 0.5), i);
  EXPECT_EQ(tree.find_prefix(5.0), 4);
  EXPECT_EQ(tree.find_prefix(7.5), 4);
  expect_invariants(tree);

  SumTree single(1);
  EXPECT_EQ(single.leaf_offset(), 1);
  single.set(0, 0.25);
  EXPECT_EQ(single.total(), 0.25);
  EXPECT_EQ(single.find_prefix(0.0), 0);
  EXPECT_EQ(single.find_prefix(1.0), 0);
  EXPECT_EQ(single.min_positive(), 0.25);
}

TEST(SumTreeTest, MinPositiveIgnoresZerosAndTracksUpdates) {
  SumTree tree(6);
  EXPECT_EQ(tree.min_positive(), kInfinity);
  tree.set(2, 5.0);
  tree.set(4, 0.5);
  EXPECT_EQ(tree.min_positive(), 0.5);
  tree.set(4, 7.0);
  EXPECT_EQ(tree.min_positive(), 5.0);
  tree.set(2, 0.0);
  EXPECT_EQ(tree.min_positive(), 7.0);
  tree.set(4, 0.0);
  EXPECT_EQ(tree.min_positive(), kInfinity);
}

TEST(SumTreeTest, RejectsBadInputs) {
  EXPECT_THROW(SumTree(0), std::invalid_argument);
  SumTree tree(3);
  EXPECT_THROW(tree.find_prefix(0.0), std::invalid_argument);  // every priority is 0
  EXPECT_THROW(tree.set(3, 1.0), std::invalid_argument);
  EXPECT_THROW(tree.set(-1, 1.0), std::invalid_argument);
  EXPECT_THROW(tree.set(0, -0.5), std::invalid_argument);
  EXPECT_THROW(tree.set(0, std::nan("")), std::invalid_argument);
  EXPECT_THROW(tree.set(0, kInfinity), std::invalid_argument);
  EXPECT_THROW(tree.get(3), std::invalid_argument);
  tree.set(0, 1.0);
  EXPECT_THROW(tree.find_prefix(std::nan("")), std::invalid_argument);
  EXPECT_EQ(tree.total(), 1.0);  // the rejected sets changed nothing
}

}  // namespace
}  // namespace concord::algos
